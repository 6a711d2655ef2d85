import Foundation

/// One fenced code block of a markdown file, classified by its info string (see `DocTests.swift`
/// for the convention).
struct DocBlock: Equatable, Sendable {
    enum Kind: Equatable, Sendable {
        /// A file the reader creates: `LANG file=PATH`.
        case file(path: String)
        /// Commands the reader runs: `sh`, `bash` or `shell` with no `norun`.
        case run
        /// Commands shown but not run: `sh norun`.
        case norun
        /// Anything else (output, JSON, a synopsis, code shown for reading): not used.
        case illustration
    }

    var kind: Kind
    /// The info string's first word (`swift`, `sh`, …; empty when there is none).
    var language: String
    /// The 1-based line of the opening fence.
    var line: Int
    /// The lines between the fences, each ending with a newline.
    var text: String
}

/// A problem with a doc's fences: a block the harness cannot classify safely.
struct DocBlockError: Error, CustomStringConvertible {
    var file: String
    var line: Int
    var message: String
    var description: String { "\(file):\(line): \(message)" }
}

/// Finds the fenced code blocks of a markdown file (CommonMark backtick fences, indented at most
/// three spaces; the indentation of the opening fence is removed from the block's lines).
enum DocBlocks {
    /// Languages whose blocks are commands to run.
    static let shellLanguages: Set<String> = ["sh", "bash", "shell"]

    static func parse(_ markdown: String, file: String = "<doc>") throws(DocBlockError) -> [DocBlock] {
        var blocks: [DocBlock] = []
        var open: (fence: Int, indent: Int, info: String, line: Int, lines: [Substring])?
        let lines = markdown.split(separator: "\n", omittingEmptySubsequences: false)
        for (index, rawLine) in lines.enumerated() {
            let indent = rawLine.prefix(while: { $0 == " " }).count
            let trimmed = rawLine.dropFirst(indent)
            let ticks = trimmed.prefix(while: { $0 == "`" }).count
            if var current = open {
                // A closing fence: at least as many backticks, nothing after them but spaces.
                if indent <= 3, ticks >= current.fence, trimmed.dropFirst(ticks).allSatisfy({ $0 == " " }) {
                    blocks.append(try block(info: current.info, line: current.line, lines: current.lines, file: file))
                    open = nil
                } else {
                    var content = rawLine
                    let removable = min(current.indent, content.prefix(while: { $0 == " " }).count)
                    content = content.dropFirst(removable)
                    current.lines.append(content)
                    open = current
                }
            } else if indent <= 3, ticks >= 3 {
                let info = trimmed.dropFirst(ticks).trimmingCharacters(in: .whitespaces)
                guard !info.contains("`") else { continue }  // inline code, not a fence
                open = (ticks, indent, info, index + 1, [])
            }
        }
        if let open {
            throw DocBlockError(file: file, line: open.line, message: "a code block is never closed")
        }
        return blocks
    }

    private static func block(
        info: String, line: Int, lines: [Substring], file: String
    ) throws(DocBlockError)
        -> DocBlock
    {
        let words = info.split(separator: " ").map(String.init)
        let language = words.first ?? ""
        var path: String?
        var norun = false
        for word in words.dropFirst() {
            if word == "norun" {
                norun = true
            } else if word.hasPrefix("file=") {
                path = String(word.dropFirst("file=".count))
            } else {
                throw DocBlockError(
                    file: file, line: line,
                    message:
                        "unknown fence attribute '\(word)' (known: file=PATH, norun); see Tests/EndToEndTests/DocTests.swift"
                )
            }
        }
        let text = lines.map { $0 + "\n" }.joined()
        if let path {
            guard !norun else {
                throw DocBlockError(file: file, line: line, message: "a file block cannot be norun")
            }
            guard !path.isEmpty, !path.hasPrefix("/"), !path.split(separator: "/").contains(".."),
                !path.contains("'")
            else {
                throw DocBlockError(
                    file: file, line: line, message: "file=\(path) must be a relative path inside the doc's folder")
            }
            return DocBlock(kind: .file(path: path), language: language, line: line, text: text)
        }
        if shellLanguages.contains(language) {
            return DocBlock(kind: norun ? .norun : .run, language: language, line: line, text: text)
        }
        guard !norun else {
            throw DocBlockError(file: file, line: line, message: "norun is only meaningful on sh, bash or shell blocks")
        }
        return DocBlock(kind: .illustration, language: language, line: line, text: text)
    }
}
