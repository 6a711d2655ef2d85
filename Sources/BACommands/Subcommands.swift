import ArgumentParser
import BADaemonProtocol

/// `ba`'s subcommands from this module, in the order `ba --help` lists them; the `ba` executable
/// puts `ba demo` (module `BADemo`) first.
package enum BASubcommands {
    package static let all: [any ParsableCommand.Type] = [
        RunExtension.self, Fetch.self, Status.self, Downloads.self, Promote.self, Cancel.self, Retry.self, Events.self,
        Lock.self,
        Install.self, Update.self, Uninstall.self, Simulate.self, Apps.self, Purge.self, Service.self, Pack.self,
        Packs.self,
    ]

    /// `ba --version`: the release these binaries belong to (the same as `basd --version`).
    package static let version = ReleaseVersion.string
}
