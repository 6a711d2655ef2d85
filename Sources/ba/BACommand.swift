import ArgumentParser
import BACommands
import BADemo

/// `ba`: the Background Assets command line.
struct BACommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
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
        version: BASubcommands.version,
        subcommands: [BADemoCommand.command] + BASubcommands.all(pack: PackWithServe.self))

    init() {}
}
