import ArgumentParser
import BACore
import BAPacks
import Foundation

/// `ba pack convert`: a Steam depot build script to a pack manifest (`ba-package convert`).
struct PackConvert: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "convert", abstract: "Turn a Steam depot build script (.vdf) into a pack manifest.",
        discussion: """
            Reads Steamworks' "DepotBuildConfig": ContentRoot, each FileMapping (LocalPath, DepotPath, \
            recursive) and FileExclusion become the manifest's contentRoot, fileMappings and fileExclusions, \
            which `ba pack build` packs as Steam would install them. InstallScript and FileProperties are \
            ignored (said so); anything else is an error naming its line. A ContentRoot that is a Windows \
            path is replaced with --content-root. See docs/packs.md, "From a Steam depot".

            Examples:
              ba pack convert depot_build_1001.vdf --asset-pack-id voice-english -l en-US --on-demand -o voice-english.json
              ba pack convert depot_build_1002.vdf --asset-pack-id base --essential --content-root ../build -o base.json
            """)

    enum Policy: String, EnumerableFlag {
        case essential, prefetch, onDemand
    }

    @Argument(help: "The depot build script (depot_build_ID.vdf).")
    var script: String

    @Option(help: "The pack's assetPackID.")
    var assetPackID: String

    @Option(name: .customShort("l"), help: ArgumentHelp("The pack's language (BCP-47).", valueName: "language"))
    var language: String?

    @Flag(help: "The pack's download policy (essential and prefetch: on first installation and updates).")
    var policy: Policy

    @Option(help: "The folder the depot's files are in, instead of the script's ContentRoot.")
    var contentRoot: String?

    @Option(name: .shortAndLong, help: "Where to write the manifest (refused if it exists).")
    var output: String

    func run() throws {
        guard let data = FileManager.default.contents(atPath: script) else {
            printError("cannot read the depot build script \(script)")
            throw ExitCode(BAExitCode.noInput.rawValue)
        }
        guard !FileManager.default.fileExists(atPath: output) else {
            printError("\(output) exists; give another path with -o, or remove it first")
            throw ExitCode(BAExitCode.cannotWrite.rawValue)
        }
        let events: Set<PackManifest.InstallationEvent> = [.firstInstallation, .subsequentUpdate]
        let downloadPolicy: PackManifest.DownloadPolicy =
            switch policy {
            case .essential: .essential(events)
            case .prefetch: .prefetch(events)
            case .onDemand: .onDemand
            }
        let folder = (script as NSString).deletingLastPathComponent
        let outputFolder = (output as NSString).deletingLastPathComponent
        let conversion = DepotScript.Conversion(
            assetPackID: assetPackID, downloadPolicy: downloadPolicy, language: language,
            scriptFolder: folder.isEmpty ? "." : folder, contentRoot: contentRoot,
            outputFolder: outputFolder.isEmpty ? "." : outputFolder)
        let converted: (json: [UInt8], manifest: PackManifest)
        let root: String
        let depot: DepotScript
        do throws(DepotScript.ConvertError) {
            depot = try DepotScript.parse(Array(data))
            converted = try depot.manifest(conversion)
            root = try depot.resolvedRoot(conversion)
        } catch {
            printError(error.line > 0 ? "\(script):\(error.line): \(error.message)" : "\(script): \(error.message)")
            throw ExitCode(BAExitCode.packInvalid.rawValue)
        }
        for note in depot.ignored { printError("\(script): \(note)") }
        // What the depot maps, when its files are here: the same check `ba pack build` makes.
        var mapped = ""
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: root, isDirectory: &isFolder), isFolder.boolValue {
            do throws(PackError) {
                let files = try PackBuilder.files(of: converted.manifest, root: root)
                mapped = "; it maps \(files.count) file(s) of \(root)"
            } catch {
                printError("\(script): \(error)")
                throw ExitCode(BAExitCode.packInvalid.rawValue)
            }
        } else {
            mapped = "; \(root) is not here yet: `ba pack build` reads it"
        }
        do {
            try Data(converted.json).write(to: URL(fileURLWithPath: output), options: .withoutOverwriting)
        } catch {
            printError("cannot write \(output): \(error.localizedDescription)")
            throw ExitCode(BAExitCode.cannotWrite.rawValue)
        }
        print(
            "wrote \(output): \(assetPackID), \(converted.manifest.fileMappings.count) mapping(s), \(converted.manifest.fileExclusions.count) exclusion(s)\(mapped); "
                + "next: `ba pack build \(output) --version 1 -o public`")
    }
}
