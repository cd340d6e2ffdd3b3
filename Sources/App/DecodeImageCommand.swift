import Core

/// `scangate decode-image FILE...`.
enum DecodeImageCommand {
    static func run(_ arguments: [String]) -> Int32 {
        usageError("decode-image is not available in this build")
    }
}
