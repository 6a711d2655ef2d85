/// JSON text written directly, byte for byte what `JSONEncoder` writes: for the messages and
/// records basd writes most (the daemon protocol's `MessageWriter`, the store's event payloads),
/// where Foundation's encoder cost a large share of each small download.
package enum JSONText {
    /// `number` in decimal, as `JSONEncoder` writes it.
    package static func appendInteger(_ number: Int64, to out: inout [UInt8]) {
        var magnitude = number.magnitude
        if number < 0 { out.append(UInt8(ascii: "-")) }
        let start = out.count
        repeat {
            out.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        out[start...].reverse()
    }

    /// `text` as a JSON string, as `JSONEncoder` writes it: `"` and `\` escaped, `/` too unless
    /// `escapingSlashes` is false (`.withoutEscapingSlashes`), `\b \f \n \r \t`, other control
    /// characters as `\u00xx`, everything else as its UTF-8. Runs of bytes that need no escape are
    /// copied whole.
    package static func appendString(_ text: String, to out: inout [UInt8], escapingSlashes: Bool) {
        out.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { bytes in
            var runStart = 0
            for (index, byte) in bytes.enumerated() {
                let escaped: UInt8
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): escaped = byte
                case UInt8(ascii: "/") where escapingSlashes: escaped = byte
                case 0x08: escaped = UInt8(ascii: "b")
                case 0x0c: escaped = UInt8(ascii: "f")
                case 0x0a: escaped = UInt8(ascii: "n")
                case 0x0d: escaped = UInt8(ascii: "r")
                case 0x09: escaped = UInt8(ascii: "t")
                case 0..<0x20: escaped = UInt8(ascii: "u")
                default: continue
                }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                out.append(UInt8(ascii: "\\"))
                out.append(escaped)
                if escaped == UInt8(ascii: "u") {
                    // A control character: 00 and two lowercase hex digits, the first 0 or 1.
                    let low = byte & 0xf
                    out += [UInt8(ascii: "0"), UInt8(ascii: "0"), UInt8(ascii: "0") + byte >> 4]
                    out.append(low < 10 ? UInt8(ascii: "0") + low : UInt8(ascii: "a") + low - 10)
                }
                runStart = index + 1
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        }
        out.append(UInt8(ascii: "\""))
    }
}
