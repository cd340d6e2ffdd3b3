/// The control bytes STX/ETX framing writes.
enum ControlByte {
    static let stx: UInt8 = 0x02
    static let etx: UInt8 = 0x03
}
