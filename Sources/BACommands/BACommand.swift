import ArgumentParser

/// `ba`: the Background Assets command line.
public struct BACommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "ba",
        abstract: "Background Assets for Linux: run extensions, fetch assets, watch and steer basd.",
        discussion: """
            Exit codes are documented in docs/cli.md. Examples:
              ba demo
              ba run-extension .build/debug/libSampleSwiftExtension.so --event install \\
                 --manifest Examples/Manifests/sample-manifest.json
              ba status
              ba events --follow
              ba service install
            """,
        subcommands: [
            Demo.self, RunExtension.self, Fetch.self, Status.self, Downloads.self, Promote.self, Cancel.self,
            Events.self, Lock.self, Install.self, Update.self, Simulate.self, Apps.self, Purge.self, Service.self,
        ])

    public init() {}
}
