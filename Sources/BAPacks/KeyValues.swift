/// Valve's KeyValues text (`.vdf`), as Steam's build scripts use it: `"key" "value"` pairs and
/// `"key" { … }` blocks, quoted or bare tokens, `//` comments. Bounded in size, depth, token
/// length and entries: a script is read whole before anything is planned from it.
///
/// What Valve's format has that a build script does not need is refused with its line, never
/// skipped: `#include` and `#base`, conditionals (`[$WIN32]`). Backslashes are kept as they are
/// (a depot script's Windows paths, `"D:\Game\"`, use them as separators, not escapes).
package struct KeyValues: Sendable, Hashable {
    /// One `key value` or `key { … }`, with the line its key is on (from 1).
    package struct Entry: Sendable, Hashable {
        package var key: String
        package var value: Value
        package var line: Int
    }

    /// A string, or a block of entries in their order.
    package enum Value: Sendable, Hashable {
        case string(String)
        case block([Entry])
    }

    /// The top level's entries.
    package var entries: [Entry]

    /// The bounds a script is read within.
    package struct Limits: Sendable, Hashable {
        package var maximumBytes = 1 << 20
        package var maximumDepth = 32
        package var maximumTokenBytes = 4096
        package var maximumEntries = 100_000
        package init() {}
    }

    /// What is wrong with a script, and on which line (from 1).
    package struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        package var line: Int
        package var message: String
        package var description: String { "line \(line): \(message)" }
    }

    /// Parses `bytes` (UTF-8, an optional byte-order mark) within `limits`.
    package static func parse(_ bytes: [UInt8], limits: Limits = Limits()) throws(ParseError) -> KeyValues {
        guard bytes.count <= limits.maximumBytes else {
            throw ParseError(
                line: 1, message: "the script is \(bytes.count) bytes; at most \(limits.maximumBytes) are read")
        }
        var parser = Parser(bytes: bytes, limits: limits)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.position = 3 }
        let entries = try parser.block(depth: 0, closedBy: nil)
        return KeyValues(entries: entries)
    }

    private struct Parser {
        let bytes: [UInt8]
        let limits: Limits
        var position = 0
        var line = 1
        var entries = 0

        enum Token: Equatable {
            case open, close, end
            case text(String, quoted: Bool)
        }

        init(bytes: [UInt8], limits: Limits) {
            self.bytes = bytes
            self.limits = limits
        }

        /// Entries up to `}` (a block, `closedBy` the line it opened on) or the end (the top level).
        mutating func block(depth: Int, closedBy opened: Int?) throws(ParseError) -> [Entry] {
            guard depth <= limits.maximumDepth else {
                throw ParseError(line: line, message: "blocks nest deeper than \(limits.maximumDepth)")
            }
            var result: [Entry] = []
            while true {
                let keyLine = try skipSpace()
                let token = try next()
                switch token {
                case .end:
                    if let opened {
                        throw ParseError(
                            line: line, message: "the block opened on line \(opened) is never closed (a `}` is missing)"
                        )
                    }
                    return result
                case .close:
                    guard opened != nil else { throw ParseError(line: keyLine, message: "`}` closes no block") }
                    return result
                case .open:
                    throw ParseError(line: keyLine, message: "`{` without a key before it")
                case .text(let key, let quoted):
                    if !quoted, key.hasPrefix("#") {
                        throw ParseError(
                            line: keyLine, message: "\(key) is not supported: put the included script's entries here")
                    }
                    entries += 1
                    guard entries <= limits.maximumEntries else {
                        throw ParseError(line: keyLine, message: "more than \(limits.maximumEntries) entries")
                    }
                    _ = try skipSpace()
                    let valueLine = line
                    switch try next() {
                    case .open:
                        result.append(
                            Entry(
                                key: key, value: .block(try block(depth: depth + 1, closedBy: valueLine)), line: keyLine
                            ))
                    case .text(let value, let quoted):
                        if !quoted, value.hasPrefix("[") {
                            throw ParseError(line: valueLine, message: "conditional \(value) is not supported")
                        }
                        result.append(Entry(key: key, value: .string(value), line: keyLine))
                    case .close, .end:
                        throw ParseError(line: valueLine, message: "\"\(key)\" has no value (a string or a { block })")
                    }
                    // A conditional after the value (`"key" "value" [$WIN32]`).
                    _ = try skipSpace()
                    if position < bytes.count, bytes[position] == UInt8(ascii: "[") {
                        throw ParseError(line: line, message: "conditionals ([$…]) are not supported")
                    }
                }
            }
        }

        /// Skips white space and `//` comments; returns the line the next token is on.
        mutating func skipSpace() throws(ParseError) -> Int {
            while position < bytes.count {
                let byte = bytes[position]
                if byte == UInt8(ascii: "\n") {
                    line += 1
                    position += 1
                } else if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") {
                    position += 1
                } else if byte == UInt8(ascii: "/"), position + 1 < bytes.count,
                    bytes[position + 1] == UInt8(ascii: "/")
                {
                    while position < bytes.count, bytes[position] != UInt8(ascii: "\n") { position += 1 }
                } else {
                    break
                }
            }
            return line
        }

        mutating func next() throws(ParseError) -> Token {
            guard position < bytes.count else { return .end }
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "{"):
                position += 1
                return .open
            case UInt8(ascii: "}"):
                position += 1
                return .close
            case UInt8(ascii: "\""):
                let start = line
                position += 1
                let begin = position
                while position < bytes.count, bytes[position] != UInt8(ascii: "\"") {
                    if bytes[position] == UInt8(ascii: "\n") {
                        throw ParseError(
                            line: start, message: "a quoted string is not closed on its line (a `\"` is missing)")
                    }
                    position += 1
                    guard position - begin <= limits.maximumTokenBytes else {
                        throw ParseError(
                            line: start, message: "a string is longer than \(limits.maximumTokenBytes) bytes")
                    }
                }
                guard position < bytes.count else {
                    throw ParseError(line: start, message: "a quoted string is not closed (a `\"` is missing)")
                }
                let text = try string(bytes[begin..<position])
                position += 1
                return .text(text, quoted: true)
            default:
                let begin = position
                while position < bytes.count {
                    let byte = bytes[position]
                    if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")
                        || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "{") || byte == UInt8(ascii: "}")
                        || byte == UInt8(ascii: "\"")
                    {
                        break
                    }
                    position += 1
                    guard position - begin <= limits.maximumTokenBytes else {
                        throw ParseError(
                            line: line, message: "a token is longer than \(limits.maximumTokenBytes) bytes")
                    }
                }
                return .text(try string(bytes[begin..<position]), quoted: false)
            }
        }

        func string(_ slice: ArraySlice<UInt8>) throws(ParseError) -> String {
            guard let text = String(validating: slice, as: UTF8.self) else {
                throw ParseError(line: line, message: "the text is not UTF-8")
            }
            guard !text.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" }) else {
                throw ParseError(line: line, message: "a string holds a control character")
            }
            return text
        }
    }
}
