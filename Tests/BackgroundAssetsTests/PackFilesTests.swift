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

    @Test("the shared namespace: first pack by ID, or the one named; nothing outside the packs")
    func locate() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("packfiles-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        for (pack, file) in [("alpha", "shared/x.txt"), ("beta", "shared/x.txt"), ("beta", "only/y.txt")] {
            let path = root + "/" + pack + "/" + file
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(pack.utf8).write(to: URL(fileURLWithPath: path))
        }
        try FileManager.default.createDirectory(atPath: root + "/.background-assets", withIntermediateDirectories: true)
        #expect(try PackFiles.locate("shared/x.txt", in: root, pack: nil, files: true) == root + "/alpha/shared/x.txt")
        #expect(
            try PackFiles.locate("shared/x.txt", in: root, pack: "beta", files: true) == root + "/beta/shared/x.txt")
        #expect(try PackFiles.locate("only/y.txt", in: root, pack: nil, files: true) == root + "/beta/only/y.txt")
        #expect(try PackFiles.locate("only", in: root, pack: nil, files: false) == root + "/beta/only")
        for (path, pack) in [
            ("only", nil), ("only/y.txt", "alpha"), ("../beta/only/y.txt", "alpha"), ("/etc/passwd", nil), ("", nil),
            ("shared/./x.txt", nil),
        ] as [(FilePath, String?)] {
            #expect(throws: ManagedBackgroundAssetsError.self, "\(path) in \(pack ?? "all")") {
                try PackFiles.locate(path, in: root, pack: pack, files: true)
            }
        }
        #expect(throws: ManagedBackgroundAssetsError.self) {
            try PackFiles.locate("x", in: root, pack: "gamma", files: true)
        }
        #expect(throws: ManagedBackgroundAssetsError.self) {
            try PackFiles.locate("x", in: root, pack: ".background-assets", files: true)
        }
    }
}
