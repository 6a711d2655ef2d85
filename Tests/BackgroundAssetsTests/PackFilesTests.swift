import BADaemonProtocol
import Foundation
import Testing

@testable import BackgroundAssets

/// AssetPackManager's rules that need no basd, as tables: Apple's status flags from a listing,
/// when an ensure is done, what a manifest check changed, and where a path is in the shared
/// namespace of the local packs.
@Suite struct PackFilesTests {
    static func info(_ id: String, local: Int?, server: Int?, status: String) -> PackInfo {
        var info = PackInfo(appIdentifier: "com.example.app", assetPackID: id, status: PackStatus(words: status))
        info.localVersion = local
        info.serverVersion = server
        return info
    }

    static let rows: [(local: Int?, server: Int?, words: String, relativeTo: Int?, expected: AssetPack.Status)] = [
        (nil, 1, "downloadAvailable", nil, [.downloadAvailable]),
        (nil, 1, "downloadAvailable,downloading", nil, [.downloadAvailable, .downloading]),
        (1, 1, "downloaded,upToDate", nil, [.downloaded, .upToDate]),
        (1, 2, "downloaded,outOfDate", nil, [.downloaded, .outOfDate, .updateAvailable]),
        (1, 2, "downloaded,outOfDate,downloading", nil, [.downloaded, .outOfDate, .updateAvailable, .downloading]),
        (1, nil, "downloaded,obsolete", nil, [.downloaded, .obsolete, .upToDate]),
        (nil, nil, "failed", nil, []),
        // Relative to a given version.
        (2, 2, "downloaded,upToDate", 3, [.downloaded, .outOfDate, .updateAvailable]),
        (2, 3, "downloaded,outOfDate", 2, [.downloaded, .upToDate]),
        (nil, 3, "downloadAvailable", 2, [.downloadAvailable]),
    ]

    @Test("Apple's status flags from basd's listing", arguments: 0..<rows.count)
    func status(row: Int) {
        let (local, server, words, relative, expected) = Self.rows[row]
        let status = PackFiles.status(Self.info("p", local: local, server: server, status: words), relativeTo: relative)
        #expect(status == expected, "row \(row): \(status)")
    }

    @Test("Apple's bit values")
    func bits() {
        #expect(AssetPack.Status.downloadAvailable.rawValue == 1)
        #expect(AssetPack.Status.updateAvailable.rawValue == 2)
        #expect(AssetPack.Status.upToDate.rawValue == 4)
        #expect(AssetPack.Status.outOfDate.rawValue == 8)
        #expect(AssetPack.Status.obsolete.rawValue == 16)
        #expect(AssetPack.Status.downloading.rawValue == 32)
        #expect(AssetPack.Status.downloaded.rawValue == 64)
        #expect(BAManagedErrorCode.assetPackNotFound.rawValue == 0)
        #expect(BAManagedErrorCode.fileNotFound.rawValue == 1)
        #expect(BAManagedErrorCode.localAvailabilityFailure.rawValue == 2)
        let error = ManagedBackgroundAssetsError.fileNotFound(at: "a/b") as NSError
        #expect(error.domain == "BAManagedErrorDomain" && error.code == 1)
    }

    @Test("an ensure is done once a version is local (with requireLatest: the listed one)")
    func satisfied() {
        let table: [(Int?, Int?, Bool, Bool)] = [
            (nil, 1, false, false), (1, 1, false, true), (1, 2, false, true), (1, 2, true, false),
            (2, 2, true, true), (1, nil, true, true), (nil, nil, true, false),
        ]
        for (local, server, latest, expected) in table {
            let info = Self.info("p", local: local, server: server, status: "")
            #expect(
                PackFiles.isSatisfied(info, requireLatest: latest) == expected,
                "\(local as Any) \(server as Any) \(latest)")
        }
    }

    @Test("checkForUpdates: local packs the manifest has a newer version of, and local packs that went")
    func changes() {
        let before = [
            Self.info("a", local: 1, server: 1, status: ""), Self.info("b", local: 1, server: 1, status: ""),
            Self.info("c", local: nil, server: 1, status: ""), Self.info("d", local: 2, server: 2, status: ""),
        ]
        let after = [
            Self.info("a", local: 1, server: 2, status: ""),  // updating
            Self.info("c", local: nil, server: 2, status: ""),  // not local: not an update
            Self.info("d", local: nil, server: 2, status: ""),  // its files went
        ]
        let (updating, removed) = PackFiles.changes(before: before, after: after)
        #expect(updating == ["a"])
        #expect(removed == ["b", "d"])
    }

    /// `ROOT/AssetPacks/ID -> ../.background-assets/packs/ID/1` for each pack, as basd lays them out.
    static func layout(_ files: [(pack: String, path: String)]) throws -> String {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("packfiles-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root + "/AssetPacks", withIntermediateDirectories: true)
        for (pack, file) in files {
            let path = root + "/.background-assets/packs/" + pack + "/1/" + file
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(pack.utf8).write(to: URL(fileURLWithPath: path))
            let link = root + "/AssetPacks/" + pack
            if (try? FileManager.default.destinationOfSymbolicLink(atPath: link)) == nil {
                try FileManager.default.createSymbolicLink(
                    atPath: link, withDestinationPath: "../.background-assets/packs/" + pack + "/1")
            }
        }
        return root
    }

    /// Where `locate` found `path`, read back.
    static func found(_ packs: LocalPacks, _ path: FilePath, pack: String? = nil, files: Bool = true) throws -> String {
        let item = try packs.locate(path, pack: pack, files: files)
        defer { try? item.descriptor.close() }
        return item.isFolder
            ? item.path
            : item.path + "=" + String(decoding: try LocalPacks.readAll(item.descriptor, path: path), as: UTF8.self)
    }

    @Test("the shared namespace: first pack by ID, or the one named; nothing outside the packs, no link followed")
    func locate() throws {
        let root = try Self.layout([("alpha", "shared/x.txt"), ("beta", "shared/x.txt"), ("beta", "only/y.txt")])
        defer { try? FileManager.default.removeItem(atPath: root) }
        let links = root + "/AssetPacks"
        let packs = LocalPacks(links: links)
        #expect(try Self.found(packs, "shared/x.txt") == links + "/alpha/shared/x.txt=alpha")
        #expect(try Self.found(packs, "shared/x.txt", pack: "beta") == links + "/beta/shared/x.txt=beta")
        #expect(try Self.found(packs, "only/y.txt") == links + "/beta/only/y.txt=beta")
        #expect(try Self.found(packs, "only", files: false) == links + "/beta/only")
        #expect(packs.isLocal("alpha") && packs.currentVersion(of: "beta") == 1)
        // Planted: a link in a version, a pack link out of the tree, one not of basd's form.
        let version = root + "/.background-assets/packs/beta/1"
        try FileManager.default.createSymbolicLink(atPath: version + "/hosts", withDestinationPath: "/etc/hosts")
        try FileManager.default.createSymbolicLink(atPath: version + "/up", withDestinationPath: "..")
        try FileManager.default.createSymbolicLink(atPath: links + "/etc", withDestinationPath: "/etc")
        try FileManager.default.createSymbolicLink(
            atPath: links + "/gamma", withDestinationPath: "../.background-assets/packs/beta/1")
        try FileManager.default.createDirectory(atPath: links + "/delta", withIntermediateDirectories: true)
        for (path, pack) in [
            ("only", nil), ("only/y.txt", "alpha"), ("../beta/only/y.txt", "alpha"), ("/etc/passwd", nil), ("", nil),
            ("shared/./x.txt", nil), ("hosts", nil), ("up/1/only/y.txt", nil), ("hostname", "etc"),
        ] as [(FilePath, String?)] {
            #expect(throws: ManagedBackgroundAssetsError.self, "\(path) in \(pack ?? "all")") {
                try packs.locate(path, pack: pack, files: true)
            }
        }
        for pack in ["gamma", "delta", "etc", ".background-assets", "nothing", "../AssetPacks"] {
            #expect(!packs.isLocal(pack), "\(pack)")
            let error = #expect(throws: ManagedBackgroundAssetsError.self, "\(pack)") {
                try packs.locate("x", pack: pack, files: true)
            }
            guard case .assetPackNotFound(let id)? = error, id == pack else {
                Issue.record("\(pack): \(String(describing: error))")
                continue
            }
        }
        // No folder at all: nothing is local.
        #expect(!LocalPacks(links: root + "/none").isLocal("alpha"))
    }

    @Test(
        "a pack's link counts only as ../.background-assets/packs/ID/N, N a version within bounds",
        arguments: [
            ("../.background-assets/packs/a/1", 1),
            ("../.background-assets/packs/a/9007199254740991", 9_007_199_254_740_991),
            ("../.background-assets/packs/a/9007199254740992", nil), ("../.background-assets/packs/b/1", nil),
            ("../.background-assets/packs/a/1/..", nil), ("../.background-assets/packs/a/", nil),
            ("/x/.background-assets/packs/a/1", nil), ("../.background-assets/packs/a/+1", nil),
            ("../.background-assets/packs/a/1.staging", nil), ("../.background-assets/packs/a/99999999999999999", nil),
        ] as [(String, Int?)])
    func linkForm(target: String, version: Int?) {
        #expect(LocalPacks.version(ofLinkTarget: target, id: "a") == version)
    }

    @Test("without basd: the app's pack links in basd's default state folder, when they are there")
    func offlineFolder() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("packstate-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let links = state + "/packs/com.example.app/AssetPacks"
        try FileManager.default.createDirectory(atPath: links, withIntermediateDirectories: true)
        let environment = ["BA_STATE_DIR": state]
        #expect(PackConnection.offlinePacksFolder(app: "com.example.app", environment: environment) == links)
        #expect(
            PackConnection.offlinePacksFolder(app: "com.example.app", environment: ["XDG_DATA_HOME": state + "/x"])
                == nil)
        for app in ["com.example.other", "..", "../packs/com.example.app", ""] {
            #expect(PackConnection.offlinePacksFolder(app: app, environment: environment) == nil, "\(app)")
        }
    }
}
