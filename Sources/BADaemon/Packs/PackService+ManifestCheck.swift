import BACore
import BADaemonProtocol
import BAHashing
import BAPacks
import BAStore
import Foundation

/// Why an app's download manifest could not be used: the protocol's error code
/// (`docs/protocol.md`, "Errors": 1100–1109 for a refused manifest, 1004 when basd could not
/// read or write its own state, 1006 otherwise) and a message that says what to do.
struct PackCheckFailure: Error, Sendable, Hashable, CustomStringConvertible {
    var code: Int
    var message: String
    var description: String { message }

    init(code: Int, _ message: String) {
        self.code = code
        self.message = message
    }

    init(_ refusal: ManifestRefusal) { self.init(code: refusal.code, refusal.description) }

    /// A failure that is not the manifest's (it could not be fetched, basd could not record it).
    static func other(_ message: String) -> PackCheckFailure {
        PackCheckFailure(code: DaemonErrorCode.invalidRequest.rawValue, message)
    }

    static func internalError(_ message: String) -> PackCheckFailure {
        PackCheckFailure(code: DaemonErrorCode.internalError.rawValue, message)
    }
}

extension PackService {
    typealias CheckDone = @Sendable (PackCheckFailure?) -> Void

    // MARK: Apps

    /// `app` was installed or updated (or re-registered): records whether it gets packs and, if it
    /// does, reads its manifest and starts what `event` calls for. `done` gets nil, or why the
    /// manifest could not be used (the install reports it; essential packs cannot come).
    ///
    /// A new `BAAssetPackPublicKey` (the package manager installed the update's `Info.plist`) is
    /// taken and logged; its own sequence starts afresh (``ManifestTrust``), so that a leaked old
    /// key's fast-forward does not lock the publisher out. A key the update removed is logged as
    /// a warning and shown by `ba apps`: the app's manifests are then not signed.
    func appInstalled(
        _ app: StoredApp, hasPacks: Bool, publicKey: [UInt8]?, event: PackManifest.InstallationEvent,
        done: @escaping CheckDone
    ) {
        let name = app.bundleIdentifier
        primaryLanguages[name] = nil
        do {
            let existing = try store.packApps().first { $0.appIdentifier == name }
            let optedIn = existing?.optedInByUse == true && app.manifestURL != nil
            guard hasPacks || optedIn else {
                if existing != nil {
                    log("\(name) no longer declares BAHasManagedAssetPacks: its packs are removed")
                    uninstall(name)
                }
                done(nil)
                return
            }
            let key = publicKey.map { Data($0).base64EncodedString() }
            var warning = existing?.keyWarning
            if let old = existing?.publicKey, old != key {
                if key == nil {
                    warning =
                        "the update of \(DownloadManifestDates.today(clock.now)) removed BAAssetPackPublicKey: its download manifests are no longer checked for a signature"
                    log("warning: \(name): \(warning ?? "")")
                } else {
                    warning = nil
                    log("\(name): its update changed BAAssetPackPublicKey; manifests are checked with the new key")
                }
            } else if key != nil {
                warning = nil
            }
            try store.setPackApp(
                StoredPackApp(
                    appIdentifier: name, publicKey: key, keyWarning: warning, optedInByUse: !hasPacks))
        } catch {
            done(.internalError("basd could not record the app's asset packs: \(error)"))
            return
        }
        check(app, trigger: .installation(event), done: done)
    }

    /// `app` used `AssetPackManager` without declaring `BAHasManagedAssetPacks`: as Apple's first
    /// use of the manager does, that opts it into managed packs (if it has a `BAManifestURL`):
    /// recorded, so that its updates keep them, and its manifest read with the first
    /// installation's policies. `done` gets nil, or why that could not be done.
    func optIn(_ app: StoredApp, publicKey: [UInt8]?, done: @escaping CheckDone) {
        guard !hasPacks(app.bundleIdentifier), app.manifestURL != nil else {
            done(nil)
            return
        }
        do {
            try store.setPackApp(
                StoredPackApp(
                    appIdentifier: app.bundleIdentifier, publicKey: publicKey.map { Data($0).base64EncodedString() },
                    optedInByUse: true))
        } catch {
            done(.internalError("basd could not record the app's asset packs: \(error)"))
            return
        }
        log("\(app.bundleIdentifier) opted into managed asset packs by using AssetPackManager")
        check(app, trigger: .installation(.firstInstallation)) { [self] failure in
            guard let failure else { return done(nil) }
            // Its BAManifestURL is not a download manifest of packs (an extension's own, say): no
            // opt-in, so that its updates and periodic runs do not fail on packs it never had.
            executor.async { [self] in
                log("\(app.bundleIdentifier) does not get managed asset packs after all: \(failure)")
                uninstall(app.bundleIdentifier)
                done(failure)
            }
        }
    }

    // MARK: Manifest checks

    /// Reads `app`'s download manifest, records what it lists, and acts on each pack as `trigger`
    /// calls for (``PackDecision``). Concurrent checks of one app share one fetch.
    ///
    /// Nothing in it is believed before it passed, in order: its signature (with the app's key),
    /// its bounds (``PackPublisher/DownloadManifest/decode(_:)``) and ``ManifestTrust`` against
    /// the sequence stored for the key. A failed read of basd's own state refuses (fail closed).
    func check(_ app: StoredApp, trigger: PackDecision.Trigger, done: @escaping CheckDone) {
        let name = app.bundleIdentifier
        if checks[name] != nil {
            checks[name]?.append { [self] failure in
                guard failure == nil else { return done(failure) }
                // The manifest is fresh: decide again for this trigger.
                askExtension(trigger, app: app) { [self] in
                    apply(trigger, to: app)
                    done(nil)
                }
            }
            return
        }
        checks[name] = [done]
        let source: (url: String, overridden: Bool)?
        do { source = try manifestSource(of: app) } catch {
            finishCheck(name, failure: PackCheckFailure(error))
            return
        }
        guard let (url, overridden) = source else {
            finishCheck(
                name,
                failure: .other("\(name) has no BAManifestURL: add the URL of its download manifest to its Info.plist"))
            return
        }
        let override = overridden ? url : nil
        let key: [UInt8]?
        do {
            key = try publicKey(of: name)
        } catch {
            finishCheck(name, failure: PackCheckFailure(error))
            return
        }
        let directory = fetchDirectory(app: name)
        do { try Self.makeDirectories(directory) } catch {
            finishCheck(name, failure: .internalError("cannot create \(directory): \(error)"))
            return
        }
        fetchSequence += 1
        let manifestPath = directory + "/manifest-\(fetchSequence).json"
        transfers.fetchPackFile(
            .init(
                id: "\(name)/manifest/\(fetchSequence)", url: url, destination: manifestPath,
                byteLimit: Int64(PackLimits.maximumManifestBytes), essential: true), for: app
        ) { [self] result in
            switch result {
            case .failure(let failure):
                finishCheck(name, failure: .other("cannot fetch the download manifest \(url): \(failure.message)"))
            case .success(let path):
                guard let key else {
                    readManifest(
                        app, path: path, signature: nil, publicKey: nil, override: override, trigger: trigger)
                    return
                }
                fetchSequence += 1
                let signaturePath = directory + "/manifest-\(fetchSequence).json.sig"
                transfers.fetchPackFile(
                    .init(
                        id: "\(name)/signature/\(fetchSequence)", url: url + ".sig", destination: signaturePath,
                        byteLimit: 4096, essential: true), for: app
                ) { [self] result in
                    switch result {
                    case .failure(let failure):
                        unlink(path)
                        finishCheck(
                            name, failure: PackCheckFailure(.unsigned("\(url).sig: \(failure.message)")))
                    case .success(let signature):
                        readManifest(
                            app, path: path, signature: signature, publicKey: key, override: override,
                            trigger: trigger)
                    }
                }
            }
        }
    }

    /// The app's `BAAssetPackPublicKey` as stored (nil: it has none). Throws when basd cannot read
    /// it or what it stored is not a key: the check then refuses, never treats it as "no key".
    private func publicKey(of app: String) throws(ManifestRefusal) -> [UInt8]? {
        let record: StoredPackApp?
        do {
            record = try store.packApps().first { $0.appIdentifier == app }
        } catch {
            throw .stateUnreadable("\(error)")
        }
        guard let record else { throw .stateUnreadable("\(app) is not recorded as an app with asset packs") }
        guard let text = record.publicKey else { return nil }
        guard let data = Data(base64Encoded: text), data.count == 32 else {
            throw .stateUnreadable(
                "the stored BAAssetPackPublicKey of \(app) is not a 32-byte key; `ba update` the app")
        }
        return Array(data)
    }

    private func readManifest(
        _ app: StoredApp, path: String, signature: String?, publicKey: [UInt8]?, override: String?,
        trigger: PackDecision.Trigger
    ) {
        let name = app.bundleIdentifier
        defer {
            unlink(path)
            if let signature { unlink(signature) }
        }
        let bytes: [UInt8]
        do { bytes = try RegularFile.read(path, limit: PackLimits.maximumManifestBytes) } catch {
            finishCheck(name, failure: .internalError("cannot read the fetched manifest: \(error)"))
            return
        }
        if let signature, let publicKey {
            let text: [UInt8]
            do { text = try RegularFile.read(signature, limit: 4096) } catch {
                finishCheck(name, failure: PackCheckFailure(.unsigned("cannot read the fetched signature: \(error)")))
                return
            }
            let decoded = Data(
                base64Encoded: String(decoding: text, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
            guard let decoded, PackSigning.verify(bytes, signature: Array(decoded), publicKey: publicKey) else {
                finishCheck(name, failure: PackCheckFailure(.badSignature))
                return
            }
        }
        let manifest: PackPublisher.DownloadManifest
        do {
            manifest = try PackPublisher.DownloadManifest.decode(bytes)
        } catch {
            finishCheck(name, failure: PackCheckFailure(.invalid(error)))
            return
        }
        let sha256 = bytes.withUnsafeBytes { SHA256Hasher.hex(of: $0) }
        let keyText = Self.trustKey(
            publicKey: publicKey.map { Data($0).base64EncodedString() } ?? "", override: override)
        let mark: ManifestTrust.Mark?
        let stored: [StoredPack]
        do {
            mark = try store.packTrustMark(app: name, publicKey: keyText).map {
                ManifestTrust.Mark(sequence: $0.sequence, sha256: $0.sha256)
            }
            stored = try store.packs(app: name)
        } catch {
            finishCheck(name, failure: PackCheckFailure(.stateUnreadable("\(error)")))
            return
        }
        let local = Dictionary(
            stored.compactMap { row in row.localVersion.map { (row.packID, $0) } }, uniquingKeysWith: { a, _ in a })
        let input = ManifestTrust.Input(
            manifest: manifest, sha256: sha256, app: name, signed: publicKey != nil, now: clock.now, mark: mark,
            localVersions: local)
        let accepted: ManifestTrust.Mark?
        switch ManifestTrust.evaluate(input) {
        case .failure(let refusal):
            finishCheck(name, failure: PackCheckFailure(refusal))
            return
        case .success(let newMark):
            accepted = newMark
        }
        // Stored only now, with the packs it lists, in one transaction (never the sequence before
        // every check passed, nor the packs without their sequence).
        do {
            var rows = Dictionary(
                stored.map { ($0.packID, PackRow(replacingEntriesOf: $0)) }, uniquingKeysWith: { first, _ in first })
            var changed: [PackRow] = []
            for entry in manifest.assetPacks {
                var row = rows[entry.assetPackID] ?? PackRow(app: name, pack: entry.assetPackID)
                row.entry = entry
                rows[entry.assetPackID] = row
                changed.append(row)
            }
            let listed = Set(manifest.assetPacks.map(\.assetPackID))
            for (id, var row) in rows where !listed.contains(id) && row.entry != nil {
                row.entry = nil
                changed.append(row)
            }
            try store.acceptManifest(
                app: name, publicKey: keyText, sequence: accepted?.sequence, sha256: sha256,
                rows: changed.map(\.stored))
            if var record = try store.packApps().first(where: { $0.appIdentifier == name }) {
                record.checkedAt = clock.now
                record.checkError = nil
                record.checkErrorCode = nil
                try store.setPackApp(record)
            }
        } catch {
            finishCheck(name, failure: .internalError("basd could not record the download manifest: \(error)"))
            return
        }
        if let accepted, accepted != mark {
            log(
                "asset packs of \(name): accepted download manifest sequence \(accepted.sequence)\(manifest.expires.map { ", valid until \($0)" } ?? "")"
            )
        }
        // A folder of the app's where its packs' link goes fails the check (and `ba install`): it
        // says what to move.
        if let group = app.appGroupIdentifier, let failure = linkNamespace(group: group) {
            finishCheck(name, failure: .other(failure))
            return
        }
        askExtension(trigger, app: app) { [self] in
            apply(trigger, to: app)
            finishCheck(name, failure: nil)
        }
    }

    func finishCheck(_ app: String, failure: PackCheckFailure?) {
        if let failure {
            log("asset packs of \(app): \(failure.message)")
            do {
                if var record = try store.packApps().first(where: { $0.appIdentifier == app }) {
                    record.checkError = failure.message
                    record.checkErrorCode = failure.code
                    record.checkedAt = clock.now
                    try store.setPackApp(record)
                }
            } catch {
                log("asset packs of \(app): cannot record why the manifest check failed: \(error)")
            }
        }
        let waiting = checks.removeValue(forKey: app) ?? []
        for done in waiting { done(failure) }
    }
}

/// Dates as the pack service writes them in messages.
enum DownloadManifestDates {
    /// The day of `date`, `YYYY-MM-DD` in UTC.
    static func today(_ date: Date) -> String {
        String(PackPublisher.DownloadManifest.formatDate(date).prefix(10))
    }
}
