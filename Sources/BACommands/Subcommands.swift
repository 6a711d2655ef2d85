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

    /// `ba pack`'s configuration, for a module that adds subcommands this one does not link
    /// (`ba pack serve`, module `BADemo`): it names the command `pack` and keeps its subcommands.
    package static var packConfiguration: CommandConfiguration {
        var configuration = Pack.configuration
        configuration.commandName = "pack"
        return configuration
    }

    /// ``all`` with `ba pack` replaced by `pack` (a command made from ``packConfiguration``).
    package static func all(pack: any ParsableCommand.Type) -> [any ParsableCommand.Type] {
        all.map { ObjectIdentifier($0) == ObjectIdentifier(Pack.self) ? pack : $0 }
    }

    /// `ba --version`: the release these binaries belong to (the same as `basd --version`).
    package static let version = ReleaseVersion.string
}
