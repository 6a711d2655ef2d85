import BAPackManifest
import Foundation

/// Why a device refuses a download manifest: one case, with its own error code, per threat.
/// The codes are the protocol's (`docs/protocol.md`, "Errors"): a failed manifest check reaches
/// `ba packs`, `ba events` and the app with the code and a message that says what to do.
package enum ManifestRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// The app's `BAAssetPackPublicKey` requires a signature, and none could be fetched.
    case unsigned(String)
    /// The signature is not the key's over these bytes.
    case badSignature
    /// The manifest breaks a rule or bound (``PackError/Code/invalidMetadata``).
    case invalid(PackError)
    /// A signed manifest with nothing fresh in it (no sequence, expiry or apps): format 1, or
    /// format 3 (Apple's shape) written without them.
    case notFresh
    /// It names other apps, not this one (mix-and-match).
    case wrongApp(app: String, listed: [String])
    /// Its `expires` has passed (a frozen CDN, or a publisher who stopped publishing).
    case expired(String)
    /// Its sequence is below the highest this device accepted with this key (a rollback or a
    /// replay).
    case rollback(accepted: Int, offered: Int)
    /// Its sequence is the one accepted, its bytes are not (two manifests with one sequence).
    case fork(sequence: Int)
    /// It takes a local pack to an older version without saying the publisher means it.
    case downgrade(pack: String, local: Int, offered: Int)
    /// basd could not read what it accepted before: it refuses rather than guess (fail closed).
    case stateUnreadable(String)

    /// The protocol's error code.
    package var code: Int {
        switch self {
        case .unsigned: 1100
        case .badSignature: 1101
        case .invalid: 1102
        case .notFresh: 1103
        case .wrongApp: 1104
        case .expired: 1105
        case .rollback: 1106
        case .fork: 1107
        case .downgrade: 1108
        case .stateUnreadable: 1109
        }
    }

    package var description: String {
        switch self {
        case .unsigned(let reason):
            "the download manifest is not signed, and BAAssetPackPublicKey requires it (\(reason)): sign it with `ba pack publish --key`"
        case .badSignature:
            "the download manifest's signature does not match BAAssetPackPublicKey: refused (was it signed with another key, or changed after signing?)"
        case .invalid(let error): "\(error)"
        case .notFresh:
            "the signed download manifest has no sequence, expiry or app (format 1, or Apple's shape without them): refused, as it could be an old one replayed; publish it again with this `ba pack publish --key … --app …`"
        case .wrongApp(let app, let listed):
            "the download manifest is for \(listed.isEmpty ? "no app" : listed.joined(separator: ", ")), not \(app): refused (publish it with `ba pack publish --app \(app)`)"
        case .expired(let date):
            "the download manifest expired at \(date): refused, as the CDN may be serving a frozen copy; the publisher must publish again (`ba pack publish`, which sets a new expiry)"
        case .rollback(let accepted, let offered):
            "the download manifest has sequence \(offered), below the \(accepted) this device accepted: refused as a rollback or replay of an old manifest; the publisher must publish again (`ba pack publish` sets a sequence above the folder's last)"
        case .fork(let sequence):
            "the download manifest has sequence \(sequence), which this device accepted with other content: refused; the publisher must publish again with a higher sequence"
        case .downgrade(let pack, let local, let offered):
            "the download manifest offers pack \(pack) version \(offered), below the local version \(local): refused; to go back on purpose, publish with `ba pack publish --downgrade \(pack)=\(offered)`"
        case .stateUnreadable(let reason):
            "basd could not read the manifest sequence it accepted before (\(reason)): refused until it can"
        }
    }
}

/// The rules a device applies to a download manifest it fetched, after the signature and the
/// bounds (``PackPublisher/DownloadManifest/decode(_:)``): I/O-free, so that every rule has a row
/// in a table test. The caller reads the ``Mark`` it stored for (app, publisher key) — failing
/// closed when it cannot — and stores the new one only once the manifest is accepted and recorded.
///
/// ```swift
/// switch ManifestTrust.evaluate(input) {
/// case .success(let mark): store(mark)   // then believe the manifest
/// case .failure(let refusal): report(refusal.code, refusal.description)
/// }
/// ```
package enum ManifestTrust {
    /// The highest manifest a device accepted for one (app, publisher key): its sequence and the
    /// SHA-256 of its bytes.
    package struct Mark: Sendable, Hashable {
        package var sequence: Int
        package var sha256: String
        package init(sequence: Int, sha256: String) {
            self.sequence = sequence
            self.sha256 = sha256
        }
    }

    package struct Input: Sendable {
        package var manifest: PackPublisher.DownloadManifest
        /// SHA-256 of the manifest's bytes.
        package var sha256: String
        /// The app whose `BAManifestURL` it came from.
        package var app: String
        /// Whether its signature was checked against the app's key (false: the app has no key).
        package var signed: Bool
        package var now: Date
        /// What was accepted before with this key (nil: nothing yet).
        package var mark: Mark?
        /// The local version of each of the app's packs.
        package var localVersions: [String: Int]

        package init(
            manifest: PackPublisher.DownloadManifest, sha256: String, app: String, signed: Bool, now: Date,
            mark: Mark?, localVersions: [String: Int]
        ) {
            self.manifest = manifest
            self.sha256 = sha256
            self.app = app
            self.signed = signed
            self.now = now
            self.mark = mark
            self.localVersions = localVersions
        }
    }

    /// Accepts the manifest (with the mark to store: nil for a manifest without a sequence, format 1
    /// or a format 3 written by hand) or says which rule refuses it, checked in this order: a
    /// manifest without a sequence only unsigned;
    /// the app among `apps` (a signed manifest must list it); not expired; the sequence not below
    /// the mark, and equal only with the same bytes; no local pack's version going down unless
    /// its entry `allowsDowngrade`.
    package static func evaluate(_ input: Input) -> Result<Mark?, ManifestRefusal> {
        let manifest = input.manifest
        guard manifest.formatVersion >= 2, let sequence = manifest.sequence else {
            if input.signed { return .failure(.notFresh) }
            return downgrade(input).map { .failure($0) } ?? .success(nil)
        }
        if let apps = manifest.apps {
            guard apps.contains(input.app) else { return .failure(.wrongApp(app: input.app, listed: apps)) }
        } else if input.signed {
            return .failure(.wrongApp(app: input.app, listed: []))
        }
        if let expires = manifest.expiryDate, expires <= input.now {
            return .failure(.expired(manifest.expires ?? ""))
        }
        if let mark = input.mark {
            if sequence < mark.sequence { return .failure(.rollback(accepted: mark.sequence, offered: sequence)) }
            if sequence == mark.sequence, input.sha256 != mark.sha256 { return .failure(.fork(sequence: sequence)) }
        }
        if let refusal = downgrade(input) { return .failure(refusal) }
        return .success(Mark(sequence: sequence, sha256: input.sha256))
    }

    private static func downgrade(_ input: Input) -> ManifestRefusal? {
        for entry in input.manifest.assetPacks where entry.allowsDowngrade != true {
            if let local = input.localVersions[entry.assetPackID], entry.version < local {
                return .downgrade(pack: entry.assetPackID, local: local, offered: entry.version)
            }
        }
        return nil
    }
}
