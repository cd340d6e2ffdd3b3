import Settings
/// OSDP v2 (SIA OSDP 2.2, IEC 60839-11-5) constants: command and reply codes, NAK codes, security block
/// types. The values are the protocol's; the names are ours.
public enum OSDPCommand: UInt8, Sendable {
    case poll = 0x60
    case id = 0x61
    case capabilities = 0x62
    case localStatus = 0x64
    case inputStatus = 0x65
    case outputStatus = 0x66
    case readerStatus = 0x67
    case output = 0x68
    case led = 0x69
    case buzzer = 0x6A
    case text = 0x6B
    case comset = 0x6E
    case keyset = 0x75
    case challenge = 0x76
    case serverCryptogram = 0x77
    case maxReplySize = 0x7B
    case fileTransfer = 0x7C
    case manufacturer = 0x80
    case abort = 0xA2
    case keepActive = 0xA7
}

public enum OSDPReply: UInt8, Sendable {
    case ack = 0x40
    case nak = 0x41
    case pdID = 0x45
    case capabilities = 0x46
    case localStatus = 0x48
    case inputStatus = 0x49
    case outputStatus = 0x4A
    case raw = 0x50
    case com = 0x54
    case clientCryptogram = 0x76
    case initialReplyMAC = 0x78
    case busy = 0x79
    case manufacturer = 0x90
    case fileTransferStatus = 0x7A
}

/// The error code of an osdp_NAK (the spec's table of NAK codes).
public enum OSDPNak: UInt8, Sendable, CustomStringConvertible {
    /// Message check character(s) error. Never sent by ScanGate: a frame whose CRC or checksum fails is
    /// not answered at all (see `OSDPFrameReader`).
    case checkCharacter = 0x01
    /// Command length error: the command's data does not have the length the command needs.
    case commandLength = 0x02
    /// Unknown command code: not implemented by this PD.
    case unknownCommand = 0x03
    /// Unexpected sequence number.
    case sequence = 0x04
    /// This PD does not support the security block (or secure channel) asked for.
    case unsupportedSecurityBlock = 0x05
    /// Security conditions not met: encryption required, wrong MAC, no key for the channel asked for.
    case securityConditions = 0x06
    /// Unable to process the command record.
    case unableToProcess = 0x09

    public var description: String {
        switch self {
        case .checkCharacter: return "NAK 01 (check character)"
        case .commandLength: return "NAK 02 (command length)"
        case .unknownCommand: return "NAK 03 (unknown command)"
        case .sequence: return "NAK 04 (sequence number)"
        case .unsupportedSecurityBlock: return "NAK 05 (unsupported security block)"
        case .securityConditions: return "NAK 06 (security conditions not met)"
        case .unableToProcess: return "NAK 09 (unable to process the record)"
        }
    }
}

/// Security block types (SEC_BLK_TYPE). Odd types come from the CP, even ones from the PD.
public enum OSDPSecurityBlock: UInt8, Sendable {
    /// CHLNG: begin a session (data: the key selector, 01 SCBK, 00 SCBK-D).
    case challenge = 0x11
    /// CCRYPT: the PD's answer.
    case clientCryptogram = 0x12
    /// SCRYPT: the CP's cryptogram.
    case serverCryptogram = 0x13
    /// RMAC_I: the session is up (data: 01, the CP's cryptogram was accepted).
    case initialReplyMAC = 0x14
    /// A command with a MAC and no (encrypted) data.
    case commandMAC = 0x15
    /// A reply with a MAC and no data.
    case replyMAC = 0x16
    /// A command with a MAC and encrypted data.
    case commandEncrypted = 0x17
    /// A reply with a MAC and encrypted data.
    case replyEncrypted = 0x18
}

/// Wire-level constants.
public enum OSDPWire {
    public static let startOfMessage: UInt8 = 0x53
    /// The optional mark byte before SOM (the line held marking for one character).
    public static let mark: UInt8 = 0xFF
    /// The broadcast address; a PD answers it with 0xFF (0x7F with the reply bit).
    public static let broadcast: UInt8 = 0x7F
    /// Bit 7 of the address byte: set in every reply.
    public static let replyBit: UInt8 = 0x80
    /// Control byte bits.
    public static let sequenceMask: UInt8 = 0x03
    public static let crcFlag: UInt8 = 0x04
    public static let securityBlockFlag: UInt8 = 0x08
    /// SOM, address, length (2), control.
    public static let headerLength = 5
    /// The MAC's length on the wire (the first 4 bytes of the 16-byte CBC value).
    public static let macLength = 4
    /// The largest packet the spec lets any device send (SIA OSDP 2.2.2 section 5.6). ScanGate's receive
    /// buffer is this large, and it says so in osdp_PDCAP: a length field above it is not a frame.
    public static let maximumPacketLength = 1440
    /// The baud rates OSDP names (SIA OSDP 2.2: 9600 to 230400).
    public static let baudRates = OSDPSettings.allowedBauds
    /// The default secure channel base key, SCBK-D (install mode only): 0x30, 0x31, ..., 0x3F.
    public static let defaultKeyBytes: [UInt8] = Array(0x30...0x3F)
}
