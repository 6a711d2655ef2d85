import ArgumentParser
import Foundation

/// `--timeout` and `--strict` of `ba install` and `ba update`: what a package hook needs.
struct InstallDeadline: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Stop waiting after this many seconds (exit 22); basd goes on with the install and its downloads.",
            valueName: "seconds"))
    var timeout: Double?

    @Flag(help: "Exit 20 when any download (not only an essential one) was refused when scheduled.")
    var strict = false

    func validate() throws {
        if let timeout, !(timeout > 0 && timeout.isFinite) {
            throw ValidationError("--timeout must be a number of seconds more than 0, not \(timeout)")
        }
    }

    /// From now, `seconds` later: says so on stderr and exits 22, wherever `ba` is waiting (for
    /// the extension's call, or for the essential downloads). basd is not asked to stop anything.
    static func arm(seconds: Double, appDirectory: String) {
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
            printError(
                "gave up waiting after \(seconds) s (--timeout); basd goes on installing \(appDirectory) "
                    + "and downloading its essentials (see `ba downloads`)")
            Foundation.exit(BAExitCode.waitTimedOut.rawValue)
        }
    }
}
