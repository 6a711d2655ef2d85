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

    @Test("every ba command and subcommand has --help with an example")
    func everyCommandHasAnExample() async throws {
        var pending: [[String]] = [[]]
        var checked: [String] = []
        while let command = pending.popLast() {
            let help = try await runProcess(ba, command + ["--help"])
            let name = (["ba"] + command).joined(separator: " ")
            #expect(help.status == 0, "\(name) --help: \(help.stderr)")
            #expect(help.stdout.contains("Example"), "\(name) --help has no example:\n\(help.stdout)")
            checked.append(name)
            pending += Self.subcommands(in: help.stdout).map { command + [$0] }
        }
        for expected in ["ba demo", "ba install", "ba simulate", "ba lock status", "ba purge"] {
            #expect(checked.contains(expected), "\(expected) was not found in the help: \(checked)")
        }
    }
}
