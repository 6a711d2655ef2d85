import ArgumentParser

/// `ba`: the Background Assets command line.
public struct BACommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "ba",
        abstract: "Background Assets for Linux: run extensions, fetch assets.",
        discussion: """
            Exit codes are documented in docs/cli.md. Example:
              ba run-extension .build/debug/libSampleSwiftExtension.so --event install \\
                 --manifest Examples/Manifests/sample-manifest.json
            """,
        subcommands: [RunExtension.self, Fetch.self])

    public init() {}
}
