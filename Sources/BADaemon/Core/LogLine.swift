/// basd's log is one line per entry, and many entries quote what a client sent (bundle
/// identifiers, download identifiers, URLs, extension log lines). So that a client cannot forge
/// an entry, control characters inside an entry are escaped before it is written.
enum LogLine {
    /// `line` with every control character (newline, carriage return, escape, …) written as
    /// `\n`, `\r`, `\t` or `\u{XX}`, and backslashes kept as they are.
    static func escaped(_ line: String) -> String {
        // The common case, a clean line, costs one pass and no copy.
        guard line.unicodeScalars.contains(where: isControl) else { return line }
        var out = ""
        out.reserveCapacity(line.utf8.count + 8)
        for scalar in line.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where isControl(scalar): out += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || scalar.value == 0x7F || (0x80...0x9F).contains(scalar.value)
            || scalar.value == 0x2028 || scalar.value == 0x2029
    }
}
