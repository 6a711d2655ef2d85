import BAHashing
import BATestSupport
import Foundation
import Testing

@testable import BAPacks

/// `ba pack convert`: Steam depot build scripts, written from Steamworks' documented format
/// ("DepotBuildConfig", FileMapping's LocalPath/DepotPath/recursive, FileExclusion), converted
/// and built with the real `ba`; and the hostile scripts it must refuse, each with its line.
@Suite("ba pack convert")
struct DepotConvertTests {
    /// Steamworks' sample depot script (depot_build_1001.vdf), with a relative ContentRoot.
    static let steamworksSample = #"""
        "DepotBuildConfig"
        {
        	// the depot this script uploads
        	"DepotID" "1001"

        	// relative paths below are under it
        	"ContentRoot"	"content\"

        	// every file, in every folder
        	"FileMapping"
        	{
        		// relative to ContentRoot
        		"LocalPath" "*"
        		// relative to the game's install folder
        		"DepotPath" "."
        		// the wildcard also matches in the folders below
        		"recursive" "1"
        	}

        	// no symbol files
        	"FileExclusion" "*.pdb"
        }
        """#

    /// A language depot: one folder's voice files into another place, not recursive, one file
    /// on its own, Windows separators, and an exclusion with a folder.
    static let voiceDepot = #"""
        "DepotBuildConfig"
        {
        	"DepotID" "1002"
        	"ContentRoot" "content"
        	"FileMapping"
        	{
        		"LocalPath" "localization\english\voice\*.ogg"
        		"DepotPath" "audio\voice"
        	}
        	"FileMapping"
        	{
        		"LocalPath" "bin\*.so"
        		"DepotPath" "lib"
        		"recursive" "1"
        	}
        	"FileMapping"
        	{
        		"LocalPath" "readme.txt"
        		"DepotPath" "docs"
        	}
        	"FileExclusion" "bin/debug/*.so"
        	"InstallScript" "installscript.vdf"
        }
        """#

    /// The content tree both scripts map.
    static func content(_ folder: PackBuildTests.Folder) throws {
        let files: [(String, Int)] = [
            ("content/game.bin", 300_000), ("content/game.pdb", 5_000), ("content/readme.txt", 100),
            ("content/bin/core.so", 80_000), ("content/bin/core.pdb", 4_000), ("content/bin/plugins/net.so", 20_000),
            ("content/bin/debug/core.so", 9_000), ("content/bin/notes.txt", 10),
            ("content/localization/english/voice/hello.ogg", 50_000),
            ("content/localization/english/voice/bye.ogg", 40_000),
            ("content/localization/english/voice/extra/deep.ogg", 1_000),
            ("content/localization/english/voice/script.txt", 300),
        ]
        for (index, (path, size)) in files.enumerated() {
            try folder.write(ContentDefinedChunkerTests.randomBytes(size, seed: UInt64(100 + index)), to: path)
        }
    }

    /// Converts `script` and builds it with the real `ba`; returns the built index's files by
    /// path, each with the SHA-256 of its bytes.
    static func convertAndBuild(
        _ folder: PackBuildTests.Folder, script: String, id: String, extra: [String] = []
    ) async throws -> [String: String] {
        let ba = BuildProducts.executable("ba")
        try folder.write(Array(script.utf8), to: "depot_build_\(id).vdf")
        try FileManager.default.createDirectory(atPath: folder.path + "/packs", withIntermediateDirectories: true)
        let manifest = folder.path + "/packs/\(id).json"
        let convert = try await runProcess(
            ba,
            [
                "pack", "convert", folder.path + "/depot_build_\(id).vdf", "--asset-pack-id", id, "--on-demand", "-o",
                manifest,
            ]
                + extra)
        #expect(convert.status == 0, "\(convert.stderr)")
        let build = try await runProcess(
            ba, ["pack", "build", manifest, "--version", "1", "-o", folder.path + "/public"])
        #expect(build.status == 0, "\(build.stderr)")
        let index = try PackIndex.read(folder.path + "/public/" + PackIndex.indexPath(id: id, version: 1))
        return Dictionary(uniqueKeysWithValues: index.files.map { ($0.path, $0.sha256) })
    }

    static func sha256(_ path: String) throws -> String {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        return bytes.withUnsafeBytes { SHA256Hasher.hex(of: $0) }
    }

    @Test func steamworksSampleMapsEverythingButSymbols() async throws {
        let folder = try PackBuildTests.Folder()
        defer { folder.remove() }
        try Self.content(folder)
        let files = try await Self.convertAndBuild(folder, script: Self.steamworksSample, id: "base")
        // "*" recursive from the root to ".": every file at its own path, but *.pdb in any folder.
        let expected = [
            "game.bin", "readme.txt", "bin/core.so", "bin/plugins/net.so", "bin/debug/core.so", "bin/notes.txt",
            "localization/english/voice/hello.ogg", "localization/english/voice/bye.ogg",
            "localization/english/voice/extra/deep.ogg", "localization/english/voice/script.txt",
        ]
        #expect(Set(files.keys) == Set(expected))
        for path in expected { #expect(files[path] == (try Self.sha256(folder.path + "/content/" + path)), "\(path)") }
        // The converted manifest says what Steam's script says, and where the content is.
        let json = try JSONSerialization.jsonObject(
            with: Data(contentsOf: URL(fileURLWithPath: folder.path + "/packs/base.json")))
        let object = try #require(json as? [String: Any])
        #expect(object["contentRoot"] as? String == "../content")
        #expect(object["fileExclusions"] as? [String] == ["*.pdb"])
        #expect((object["userInfo"] as? [String: String])?["steamDepotID"] == "1001")
        #expect(object["downloadPolicy"] as? [String: [String: String]] == ["onDemand": [:]])
    }

    @Test func languageDepotPlacesFilesWhereTheDepotSays() async throws {
        let folder = try PackBuildTests.Folder()
        defer { folder.remove() }
        try Self.content(folder)
        let ba = BuildProducts.executable("ba")
        let files = try await Self.convertAndBuild(folder, script: Self.voiceDepot, id: "voice-english")
        let expected: [String: String] = [
            // Not recursive: extra/deep.ogg stays out; *.ogg: script.txt stays out.
            "audio/voice/hello.ogg": "localization/english/voice/hello.ogg",
            "audio/voice/bye.ogg": "localization/english/voice/bye.ogg",
            // Recursive: below bin/ keeps its folders; bin/debug/*.so is excluded.
            "lib/core.so": "bin/core.so", "lib/plugins/net.so": "bin/plugins/net.so",
            "docs/readme.txt": "readme.txt",
        ]
        #expect(Set(files.keys) == Set(expected.keys))
        for (path, source) in expected {
            #expect(files[path] == (try Self.sha256(folder.path + "/content/" + source)), "\(path)")
        }
        // -l writes the language key; --essential the policy with both events.
        let manifest = folder.path + "/packs/fr.json"
        let convert = try await runProcess(
            ba,
            [
                "pack", "convert", folder.path + "/depot_build_voice-english.vdf", "--asset-pack-id", "voice-french",
                "-l", "fr-FR", "--essential", "-o", manifest,
            ])
        #expect(convert.status == 0, "\(convert.stderr)")
        #expect(convert.stderr.contains("line 22: InstallScript"), "\(convert.stderr)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: manifest))) as? [String: Any])
        #expect(object["language"] as? String == "fr-FR")
        let parsed = try PackManifest.parse(Array(try Data(contentsOf: URL(fileURLWithPath: manifest))))
        #expect(parsed.downloadPolicy == .essential([.firstInstallation, .subsequentUpdate]))
        // Never overwritten; a bad language tag refused.
        let again = try await runProcess(
            ba,
            [
                "pack", "convert", folder.path + "/depot_build_voice-english.vdf", "--asset-pack-id", "x",
                "--on-demand", "-o", manifest,
            ])
        #expect(again.status == 73)
        let badTag = try await runProcess(
            ba,
            [
                "pack", "convert", folder.path + "/depot_build_voice-english.vdf", "--asset-pack-id", "x", "-l",
                "en_US!",
                "--on-demand", "-o", folder.path + "/packs/x.json",
            ])
        #expect(badTag.status == 43 && badTag.stderr.contains("BCP-47"), "\(badTag.stderr)")
    }

    /// A symbolic link in the content root that a mapping reaches is refused by convert (which
    /// checks the mapping when the content is there) and by build: never followed out of it.
    @Test func symbolicLinkInTheContentRootIsRefused() async throws {
        let folder = try PackBuildTests.Folder()
        defer { folder.remove() }
        try Self.content(folder)
        try FileManager.default.createSymbolicLink(
            atPath: folder.path + "/content/bin/passwd.so", withDestinationPath: "/etc/passwd")
        let ba = BuildProducts.executable("ba")
        try folder.write(Array(Self.steamworksSample.utf8), to: "depot.vdf")
        let convert = try await runProcess(
            ba,
            [
                "pack", "convert", folder.path + "/depot.vdf", "--asset-pack-id", "base", "--prefetch", "-o",
                folder.path + "/base.json",
            ])
        #expect(convert.status == 43 && convert.stderr.contains("symbolic link"), "\(convert.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/base.json"))
        let manifest = try PackManifest.parse(
            Array(
                #"{"assetPackID":"b","downloadPolicy":{"onDemand":{}},"fileMappings":[{"localPath":"*","depotPath":".","recursive":true}]}"#
                    .utf8))
        #expect(throws: PackError.self) { _ = try PackBuilder.files(of: manifest, root: folder.path + "/content") }
    }

    /// Each hostile or unknown script fails with the line it is wrong on.
    @Test(arguments: [
        (#""DepotBuildConfig" { "FileMapping" { "LocalPath" "*" "#, 1, "never closed"),
        ("\"DepotBuildConfig\"\n{\n}\n}", 4, "closes no block"),
        ("\"DepotBuildConfig\"\n{\n\"FileMapping\"\n{\n\"LocalPath\" \"../secret/*\"\n}\n}", 5, "leaves ContentRoot"),
        ("\"DepotBuildConfig\"\n{\n\"FileMapping\"\n{\n\"LocalPath\" \"/etc/passwd\"\n}\n}", 5, "outside ContentRoot"),
        (
            "\"DepotBuildConfig\"\n{\n\"FileMapping\"\n{\n\"LocalPath\" \"*\"\n\"DepotPath\" \"..\\..\\x\"\n}\n}", 6,
            "leaves the install folder"
        ),
        (
            "\"DepotBuildConfig\"\n{\n\"FileMapping\"\n{\n\"LocalPath\" \"*\"\n\"DepotPath\" \"/usr/lib\"\n}\n}", 6,
            "absolute"
        ),
        (
            "\"DepotBuildConfig\"\n{\n\"ContentRoot\" \"D:\\Game\\\"\n\"FileMapping\" { \"LocalPath\" \"*\" }\n}", 3,
            "--content-root"
        ),
        (
            "\"DepotBuildConfig\"\n{\n\"FileMapping\" { \"LocalPath\" \"*\" }\n\"DepotIDs\" \"1\"\n}", 4,
            "not understood"
        ),
        (
            "\"DepotBuildConfig\"\n{\n\"FileMapping\" { \"LocalPath\" \"*\" \"Recursive\" \"yes\" }\n}", 3,
            "\"0\" or \"1\""
        ),
        ("\"DepotBuildConfig\"\n{\n\"FileMapping\" { \"LocalPath\" \"*\" } [$WIN32]\n}", 3, "conditionals"),
        ("#include \"other.vdf\"\n", 1, "not supported"),
        ("\"AppBuild\" { \"AppID\" \"1000\" }", 1, "app build script"),
        ("\"DepotBuildConfig\" { \"DepotID\" \"1001\" }", 1, "no FileMapping"),
        ("\"DepotBuildConfig\" { \"FileMapping\" { \"LocalPath\" \"a*/b\" } }", 1, "wildcard before"),
    ])
    func hostileScriptsAreRefusedWithTheirLine(_ script: String, line: Int, says: String) throws {
        let conversion = DepotScript.Conversion(
            assetPackID: "p", downloadPolicy: .onDemand, language: nil, scriptFolder: "/depot", contentRoot: nil,
            outputFolder: "/depot")
        let error = #expect(throws: DepotScript.ConvertError.self) {
            _ = try DepotScript.parse(Array(script.utf8)).manifest(conversion)
        }
        #expect(error?.line == line, "\(String(describing: error))")
        #expect(error?.message.contains(says) == true, "\(String(describing: error))")
    }

    /// Bounds: 10,000 nested blocks stop at the depth limit (no deep recursion), a token longer
    /// than the limit and a script larger than it are refused before anything is built.
    @Test func boundedParser() throws {
        let deep = String(repeating: "\"a\" {\n", count: 10_000) + String(repeating: "}\n", count: 10_000)
        let depth = #expect(throws: KeyValues.ParseError.self) { _ = try KeyValues.parse(Array(deep.utf8)) }
        #expect(depth?.message.contains("deeper than 32") == true)
        #expect(depth?.line == 33)
        let long = "\"" + String(repeating: "x", count: 5000) + "\" \"v\""
        let token = #expect(throws: KeyValues.ParseError.self) { _ = try KeyValues.parse(Array(long.utf8)) }
        #expect(token?.message.contains("longer than 4096") == true)
        let big = [UInt8](repeating: UInt8(ascii: " "), count: (1 << 20) + 1)
        #expect(throws: KeyValues.ParseError.self) { _ = try KeyValues.parse(big) }
        // Valve's form: bare tokens, comments, keys in any case.
        let parsed = try DepotScript.parse(Array("DepotBuildConfig { filemapping { localpath bin/* } } // end".utf8))
        #expect(parsed.mappings.first?.localPath.text == "bin/*")
    }

    @Test(arguments: [
        ("a.pdb", "*.pdb", true), ("bin/a.pdb", "*.pdb", false), ("abc", "a?c", true), ("ac", "a?c", false),
        ("bin/x.so", "bin/*.so", true), ("bin/d/x.so", "bin/*.so", false), ("x", "*", true), ("", "*", true),
        ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaab", "*a*a*a*a*a*a*c", false), ("Data.PAK", "*.pak", false),
    ])
    func wildcards(_ text: String, pattern: String, matches: Bool) {
        #expect(PackManifest.matches(text, pattern: pattern) == matches)
    }

    /// An exclusion without `/` is matched against the name in every folder; with `/`, against
    /// the path (its `*` stays in one folder).
    @Test func exclusionsMatchNamesEverywhereAndPathsExactly() throws {
        var manifest = try PackManifest.parse(
            Array(#"{"assetPackID":"b","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"a"}]}"#.utf8))
        manifest.fileExclusions = ["*.pdb", "bin/debug/*"]
        #expect(manifest.isExcluded("x.pdb") && manifest.isExcluded("deep/down/x.pdb"))
        #expect(manifest.isExcluded("bin/debug/a.so") && !manifest.isExcluded("bin/debug/more/a.so"))
        #expect(!manifest.isExcluded("bin/a.so"))
    }

    /// A ContentRoot written as a Windows path is replaced with --content-root; a LocalPath
    /// written as an absolute path inside the content root is made relative to it.
    @Test func contentRootGivenAndAbsolutePathsInsideIt() async throws {
        let folder = try PackBuildTests.Folder()
        defer { folder.remove() }
        try Self.content(folder)
        let root = folder.path + "/content"
        let script = """
            "DepotBuildConfig"
            {
            	"ContentRoot" "D:\\Build\\Game\\"
            	"FileMapping" { "LocalPath" "\(root)/bin/*.so" "DepotPath" "lib" }
            }
            """
        let files = try await Self.convertAndBuild(folder, script: script, id: "libs", extra: ["--content-root", root])
        #expect(Set(files.keys) == ["lib/core.so"])
        let outside = DepotScript.Located(text: "/etc/passwd", line: 3)
        #expect(throws: DepotScript.ConvertError.self) {
            _ = try DepotScript.inside(outside, root: root, what: "LocalPath")
        }
        // A prefix that is not a folder of the root is outside it ("/x/content-other" of "/x/content").
        let sibling = DepotScript.Located(text: root + "-other/a", line: 4)
        #expect(throws: DepotScript.ConvertError.self) {
            _ = try DepotScript.inside(sibling, root: root, what: "LocalPath")
        }
    }
}
