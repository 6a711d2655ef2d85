import ArgumentParser
import BACore
import BAPacks
import Foundation

/// `ba pack`: the publisher's side of asset packs (issue 21, under way: template, build, verify).
struct Pack: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Build asset packs for a static CDN (Apple's manifest; content-defined chunks).",
        discussion: """
            A pack is built from Apple's asset-pack manifest into a publish folder: an index per version \
            (packs/ID/VERSION.json) and a chunk store (chunks/XX/SHA256, zstd) that any static server or CDN \
            can serve. A chunk is stored once however many files, packs and versions share it, so a new \
            version adds only the chunks around what changed. See docs/packs.md.

            Examples:
              ba pack template -o Manifest.json
              ba pack convert depot_build_1001.vdf --asset-pack-id voice-english -l en-US --on-demand -o voice-english.json
              ba pack build Manifest.json --version 1 -o public
              ba pack verify public
              ba pack keygen -o pack-signing.key
              ba pack publish public --base-url https://cdn.example.com/game --key pack-signing.key --app com.example.game
              ba pack serve public --port 8080
            """,
        subcommands: [
            PackTemplate.self, PackConvert.self, PackBuild.self, PackVerify.self, PackKeygen.self, PackPublish.self,
            PackPrune.self,
        ])
}

/// `ba pack template`: writes a manifest to start from.
struct PackTemplate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "template", abstract: "Write an asset-pack manifest to start from (Apple's format).",
        discussion: """
            Examples:
              ba pack template -o Manifest.json
            """)

    @Option(name: .shortAndLong, help: "Where to write it (refused if it exists).")
    var output: String

    static let template = """
        {
          "assetPackID": "levels",
          "downloadPolicy": {
            "prefetch": { "installationEventTypes": ["firstInstallation", "subsequentUpdate"] }
          },
          "fileSelectors": [
            { "directory": "Levels" },
            { "file": "Intro.m4v" }
          ],
          "platforms": ["linux"],
          "userInfo": {}
        }

        """

    func run() throws {
        guard !FileManager.default.fileExists(atPath: output) else {
            printError("\(output) exists; give another path with -o, or remove it first")
            throw ExitCode(BAExitCode.cannotWrite.rawValue)
        }
        do {
            try Data(Self.template.utf8).write(to: URL(fileURLWithPath: output))
        } catch {
            printError("cannot write \(output): \(error.localizedDescription)")
            throw ExitCode(BAExitCode.cannotWrite.rawValue)
        }
        print(
            "wrote \(output): set assetPackID, one downloadPolicy (essential, prefetch or onDemand) and the "
                + "fileSelectors (relative to the manifest's folder), then `ba pack build \(output) --version 1 -o public`"
        )
    }
}

/// `ba pack build`: cuts the manifest's files into chunks and writes one version's index.
struct PackBuild: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "build", abstract: "Build one version of a pack into a publish folder.",
        discussion: """
            A version once built never changes: build the next one with a higher --version; only the chunks \
            the publish folder does not have yet are written.

            Examples:
              ba pack build Manifest.json --version 1 -o public
              ba pack build Levels/Manifest.json --version 2 -o public --root Levels --chunk-size 131072
            """)

    @Argument(help: "The pack's manifest (Apple's Manifest.json).")
    var manifest: String

    @Option(help: "The pack's version: a whole number, higher than the last published one.")
    var version: Int

    @Option(name: .shortAndLong, help: "The publish folder (created if missing).")
    var output: String

    @Option(
        help:
            "The folder the file selectors and mappings are relative to (default: the manifest's contentRoot, or its folder)."
    )
    var root: String?

    @Option(help: "The average chunk size in bytes, a power of two (default 65536).")
    var chunkSize = 65_536

    @Option(
        help:
            "Bundle size in bytes: the version's chunks are also written as bundles of about this size, which a first install fetches instead of single chunks (0: none)."
    )
    var bundleSize: Int64 = 16 << 20

    @Option(
        help:
            "Index format: 2 (a root and parts addressed by hash: an update fetches only the parts that changed) or 1 (one document, for devices whose basd reads only format 1)."
    )
    var indexFormat = 2

    func run() throws {
        guard let data = FileManager.default.contents(atPath: manifest) else {
            printError("cannot read the manifest \(manifest)")
            throw ExitCode(BAExitCode.noInput.rawValue)
        }
        do throws(PackError) {
            let parsed = try PackManifest.parse(Array(data))
            guard parsed.isForLinux else {
                print(
                    "skipped \(parsed.assetPackID): its platforms (\(parsed.platforms.joined(separator: ", "))) exclude linux"
                )
                return
            }
            let parameters: ContentDefinedChunker.Parameters
            do {
                parameters = try ContentDefinedChunker.Parameters(average: chunkSize)
            } catch {
                throw PackError("--chunk-size: \(error)")
            }
            let folder = parsed.rootFolder(
                manifestFolder: (manifest as NSString).deletingLastPathComponent, root: root)
            guard bundleSize >= 0 else { throw PackError("--bundle-size must be 0 (no bundles) or a size in bytes") }
            guard indexFormat == 1 || indexFormat == 2 else { throw PackError("--index-format is 1 or 2") }
            var builder = PackBuilder(parameters: parameters)
            builder.bundleSize = bundleSize
            builder.indexFormat = indexFormat
            let report = try builder.build(
                parsed, root: folder, version: version, publishDirectory: output)
            let index = report.index
            let size = index.files.reduce(Int64(0)) { $0 + $1.size }
            print(
                "built \(index.id) version \(index.version)\(index.language.map { " (\($0))" } ?? ""): \(index.files.count) file(s), \(HumanReadable.bytes(size)); "
                    + "\(report.chunksWritten) chunk(s) written (\(HumanReadable.bytes(report.bytesWritten))), "
                    + "\(report.chunksReused) already in \(output); download size \(HumanReadable.bytes(index.downloadSize))"
            )
        } catch {
            printError("\(error)")
            throw ExitCode(BAExitCode.packInvalid.rawValue)
        }
    }
}

/// `ba pack prune`: removes what no kept version of a publish folder references.
struct PackPrune: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune", abstract: "Remove old versions' indexes, bundles and chunks from a publish folder.",
        discussion: """
            Keeps the newest --keep versions of each pack and every version manifest.json lists, with \
            everything their indexes reference; removes other versions' indexes, then bundles, index parts \
            and chunks no kept index references and that are older than --grace (a build in progress, a \
            manifest a CDN still serves). A manifest or kept index that cannot be read removes nothing.

            Examples:
              ba pack prune public --keep 2
              ba pack prune public --keep 1 --grace 0 --dry-run
            """)

    @Argument(help: "The publish folder.")
    var folder: String

    @Option(help: "How many of each pack's newest versions to keep (at least 1).")
    var keep: Int

    @Option(help: "Leave unreferenced files younger than this: Nd, Nh, Ns, or 0 (default 1h).")
    var grace = "1h"

    @Flag(help: "Print what would be removed, and remove nothing.")
    var dryRun = false

    func validate() throws {
        guard grace == "0" || PackPublish.seconds(grace) != nil else {
            throw ValidationError("--grace \(grace): give days, hours or seconds, e.g. 1h, 90s, or 0")
        }
    }

    func run() throws {
        do throws(PackError) {
            let report = try PackPruner.prune(
                folder, keep: keep, grace: TimeInterval(PackPublish.seconds(grace) ?? 0), dryRun: dryRun)
            for path in report.removed { print("\(dryRun ? "would remove" : "removed") \(path)") }
            let kept = report.kept.keys.sorted().map { id in
                "\(id) " + (report.kept[id] ?? []).map(String.init).joined(separator: ", ")
            }
            print(
                "\(dryRun ? "would free" : "freed") \(HumanReadable.bytes(report.bytesFreed)) in \(report.removed.count) file(s); "
                    + "kept \(kept.joined(separator: "; "))"
                    + (report.young > 0
                        ? "; \(report.young) unreferenced file(s) younger than --grace \(grace) left" : ""))
        } catch {
            printError("\(error)")
            throw ExitCode(BAExitCode.packInvalid.rawValue)
        }
    }
}

/// `ba pack verify`: checks every index of a publish folder against its chunks.
struct PackVerify: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify", abstract: "Check every pack index in a publish folder against its chunk store.",
        discussion: """
            Examples:
              ba pack verify public
            """)

    @Argument(help: "The publish folder.")
    var folder: String

    func run() throws {
        let report = PackVerifier.verify(publishDirectory: folder)
        for problem in report.problems { printError(problem) }
        guard report.problems.isEmpty else {
            printError(
                "\(report.problems.count) problem(s) in \(folder): build the pack versions again (`ba pack build`), "
                    + "which writes missing chunks; remove a damaged chunk file first so it is written anew")
            throw ExitCode(BAExitCode.packInvalid.rawValue)
        }
        print(
            "\(folder): \(report.indexes) index(es), \(report.files) file(s), \(report.chunks) chunk(s): all verified")
    }
}

/// `ba pack keygen`: an Ed25519 key pair for signing download manifests.
struct PackKeygen: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen", abstract: "Write an Ed25519 key pair for signing download manifests.",
        discussion: """
            FILE gets the private key (mode 0600; keep it secret), FILE.pub the public key; the public key \
            is printed in base64 for the app's Info.plist key BAAssetPackPublicKey.

            Examples:
              ba pack keygen -o pack-signing.key
            """)

    @Option(
        name: .shortAndLong, help: "The private key's file (refused if it exists); the public key goes to FILE.pub.")
    var output: String

    func run() throws {
        for path in [output, output + ".pub"] where FileManager.default.fileExists(atPath: path) {
            printError("\(path) exists; a key is never overwritten: give another path with -o")
            throw ExitCode(BAExitCode.cannotWrite.rawValue)
        }
        do throws(PackError) {
            let pair = try PackSigning.generateKeyPair()
            let privateText = Data(pair.privateKey).base64EncodedString() + "\n"
            let publicText = Data(pair.publicKey).base64EncodedString()
            let fd = open(output, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw PackError("cannot create \(output): \(String(cString: strerror(errno)))") }
            let written = privateText.utf8.withContiguousStorageIfAvailable { write(fd, $0.baseAddress, $0.count) }
            close(fd)
            guard written == privateText.utf8.count else { throw PackError("cannot write \(output)") }
            do {
                try Data((publicText + "\n").utf8).write(to: URL(fileURLWithPath: output + ".pub"))
            } catch {
                throw PackError("cannot write \(output).pub: \(error.localizedDescription)")
            }
            print(publicText)
            FileHandle.standardError.write(
                Data(
                    "ba: wrote \(output) (private, keep it secret) and \(output).pub; set the app's Info.plist key BAAssetPackPublicKey to the line above\n"
                        .utf8))
        } catch {
            printError("\(error)")
            throw ExitCode(BAExitCode.cannotWrite.rawValue)
        }
    }
}

/// `ba pack publish`: the download manifest of a publish folder, optionally signed.
struct PackPublish: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Write a publish folder's download manifest (manifest.json), signed with --key.",
        discussion: """
            Lists the newest version of every pack in the folder with its download size, policy, userInfo, and \
            its index's URL (under --base-url, where the folder is served) and SHA-256. The app's BAManifestURL \
            is BASE_URL/manifest.json. An app with its own extension too is handed that same document: \
            --merge adds the top-level keys of a JSON file (the extension's own manifest) to it; each side \
            ignores the other's keys, and the signature covers both.

            Every manifest carries a sequence one above the folder's last, an expiry (--expires, 30 days \
            by default: publish again before it, devices refuse an expired manifest as a frozen CDN's) and \
            the apps it is for (--app, required with --key). Devices refuse a sequence below the one they \
            accepted, and a pack version below their local one unless --downgrade ID=VERSION says so.

            The manifest is in Apple's self-hosted shape (format 3: each pack's id, url, version, \
            downloadSize, downloadPolicy, host and userInfo, with indexSHA256 beside them); \
            --manifest-format 2 writes the format a basd from before it reads.

            Examples:
              ba pack publish public --base-url https://cdn.example.com/game
              ba pack publish public --base-url https://cdn.example.com/game --key pack-signing.key --app com.example.game
              ba pack publish public --base-url https://cdn.example.com/game --merge extension-manifest.json
            """)

    @Argument(help: "The publish folder.")
    var folder: String

    @Option(help: "The URL the folder is served at.")
    var baseURL: String

    @Option(help: "The private key (from `ba pack keygen`) to sign the manifest with.")
    var key: String?

    @Option(
        name: .customLong("app"),
        help: ArgumentHelp(
            "The bundle identifier of an app the manifest is for (repeat for several; required with --key).",
            valueName: "bundle-id"))
    var apps: [String] = []

    @Option(
        help: ArgumentHelp(
            "How long devices accept the manifest: days (30d), hours (12h) or seconds (90s).", valueName: "duration"))
    var expires: String = "30d"

    @Option(
        help: ArgumentHelp(
            "Publish an older version of a pack on purpose (devices refuse to go back otherwise).",
            valueName: "id=version"))
    var downgrade: [String] = []

    @Option(
        help: ArgumentHelp(
            "A JSON object whose top-level keys are added to manifest.json (an extension's own manifest).",
            valueName: "file"))
    var merge: String?

    @Option(
        help: ArgumentHelp(
            "3: Apple's self-hosted shape (the default); 2: the format a basd from before it reads.",
            valueName: "format"))
    var manifestFormat: Int = PackPublisher.DownloadManifest.currentFormat

    /// `--expires` in seconds: `Nd`, `Nh` or `Ns`, N from 1.
    static func seconds(_ text: String) -> Int? {
        let units: [Character: Int] = ["d": 86400, "h": 3600, "s": 1]
        guard let unit = text.last.flatMap({ units[$0] }), let count = Int(text.dropLast()), count >= 1,
            count <= 3650 * 86400 / unit
        else { return nil }
        return count * unit
    }

    func validate() throws {
        guard Self.seconds(expires) != nil else {
            throw ValidationError(
                "--expires \(expires): give days, hours or seconds, e.g. 30d, 12h, 90s (at most 10 years)")
        }
        for pin in downgrade {
            let parts = pin.split(separator: "=")
            guard parts.count == 2, Int(parts[1]).map({ $0 >= 1 }) == true else {
                throw ValidationError("--downgrade \(pin): give ID=VERSION, e.g. levels=3")
            }
        }
        guard manifestFormat == 2 || manifestFormat == 3 else {
            throw ValidationError("--manifest-format \(manifestFormat): give 3 (Apple's shape) or 2")
        }
        if key != nil && apps.isEmpty {
            throw ValidationError(
                "a signed manifest names the app(s) it is for, so that it cannot be served to another: add --app BUNDLE_ID"
            )
        }
    }

    func run() throws {
        var merged: [String: JSONValue] = [:]
        if let merge {
            guard let data = FileManager.default.contents(atPath: merge) else {
                printError("cannot read \(merge) (--merge)")
                throw ExitCode(BAExitCode.noInput.rawValue)
            }
            guard case .object(let keys) = try? JSONDecoder().decode(JSONValue.self, from: data) else {
                printError("\(merge) (--merge) is not a JSON object: give a file whose top level is {...}")
                throw ExitCode(BAExitCode.packInvalid.rawValue)
            }
            merged = keys
        }
        var keyText: String?
        if let key {
            guard let text = try? String(contentsOfFile: key, encoding: .utf8) else {
                printError("cannot read the key \(key)")
                throw ExitCode(BAExitCode.noInput.rawValue)
            }
            keyText = text
        }
        do throws(PackError) {
            let seed = try keyText.map { text throws(PackError) in try PackSigning.key(base64: text, what: key ?? "") }
            var downgrades: [String: Int] = [:]
            for pin in downgrade {
                let parts = pin.split(separator: "=")
                downgrades[String(parts[0])] = Int(parts[1])
            }
            let manifest = try PackPublisher.publish(
                folder, baseURL: baseURL, signingKey: seed, mergingKeys: merged, apps: apps,
                expires: Date().addingTimeInterval(TimeInterval(Self.seconds(expires) ?? 30 * 86400)),
                downgrades: downgrades, format: manifestFormat)
            for entry in manifest.assetPacks {
                print(
                    "\(entry.assetPackID) version \(entry.version)\(entry.language.map { " (\($0))" } ?? ""): \(HumanReadable.bytes(entry.downloadSize)) at \(entry.indexURL)"
                )
            }
            print(
                "wrote \(folder)/manifest.json\(seed == nil ? " (unsigned)" : " and manifest.json.sig"): sequence \(manifest.sequence ?? 0), expires \(manifest.expires ?? "never")"
            )
        } catch {
            printError("\(error)")
            throw ExitCode(BAExitCode.packInvalid.rawValue)
        }
    }
}
