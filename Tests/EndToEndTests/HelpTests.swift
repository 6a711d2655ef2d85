import BATestSupport
import Foundation
import Testing

/// Every `ba` command, found from `ba --help` itself (so a new command cannot be missed), has help
/// text with an example.
@Suite struct HelpTests {
    let ba = BuildProducts.executable("ba")

    /// The subcommand names listed under `SUBCOMMANDS:` in a help text.
    static func subcommands(in help: String) -> [String] {
        guard let section = help.components(separatedBy: "SUBCOMMANDS:").dropFirst().first else { return [] }
        var names: [String] = []
        for line in section.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty { if names.isEmpty { continue } else { break } }
            guard line.hasPrefix("  "), let first = line.split(separator: " ").first else { break }
            if !line.hasPrefix("   ") { names.append(String(first)) }  // deeper indent: a wrapped description
        }
        return names.filter { $0 != "help" }
    }

    /// Whether a help text has a line ending in `Examples:` followed by an example that runs the
    /// command itself (`  ba lock status --app …` for `ba lock status`, or for `ba lock`).
    static func hasExample(of command: String, in help: String) -> Bool {
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
        return zip(lines, lines.dropFirst()).contains { heading, example in
            heading.hasSuffix("Examples:")
                && (example == "  \(command)" || example.hasPrefix("  \(command) "))
        }
    }

    @Test("an example is a line under Examples: that runs the command")
    func whatCountsAsAnExample() {
        #expect(Self.hasExample(of: "ba lock", in: "Examples:\n  ba lock status --app x\n"))
        #expect(Self.hasExample(of: "ba demo", in: "Exit codes: … Examples:\n  ba demo\n"))
        #expect(!Self.hasExample(of: "ba demo", in: "Serves the Examples folder.\n  ba demo\n"))
        #expect(!Self.hasExample(of: "ba lock", in: "Examples:\n  ba locksmith\n"))
        #expect(!Self.hasExample(of: "ba apps", in: "Examples:\n  ba status\n"))
    }

    @Test("every ba command and subcommand has --help with an example")
    func everyCommandHasAnExample() async throws {
        var pending: [[String]] = [[]]
        var checked: [String] = []
        while let command = pending.popLast() {
            let help = try await runProcess(ba, command + ["--help"])
            let name = (["ba"] + command).joined(separator: " ")
            #expect(help.status == 0, "\(name) --help: \(help.stderr)")
            #expect(Self.hasExample(of: name, in: help.stdout), "\(name) --help has no example:\n\(help.stdout)")
            checked.append(name)
            pending += Self.subcommands(in: help.stdout).map { command + [$0] }
        }
        for expected in ["ba demo", "ba install", "ba simulate", "ba lock status", "ba purge"] {
            #expect(checked.contains(expected), "\(expected) was not found in the help: \(checked)")
        }
    }
}
