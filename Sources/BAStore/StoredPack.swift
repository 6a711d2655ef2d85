import Foundation

/// One asset pack of one app, as ``BAStore`` keeps it: one row of `asset_pack`.
///
/// Plain data; the JSON fields are the pack service's (the store only checks they are JSON).
package struct StoredPack: Sendable, Hashable {
    package var appIdentifier: String
    /// `assetPackID`.
    package var packID: String
    /// The download manifest's entry for the pack, as JSON; nil when the manifest no longer lists it.
    package var entry: String?
    /// The version on disk (`CONTAINER/AssetPacks/ID`), if any.
    package var localVersion: Int?
    /// The manifest entry of a version being assembled, as JSON: resumed after a restart.
    package var target: String?
    /// Asked for (`ba packs ensure`, the app's `ensureLocalAvailability`): an on-demand pack that
    /// was requested is kept up to date like the others.
    package var requested: Bool
    /// Why the last attempt failed, if it did, and its error code (`docs/protocol.md`).
    package var failure: String?
    package var failureCode: Int?
    /// The app's extension declined it (`shouldDownload(_:)`) for the last install or update:
    /// neither that event nor a periodic check downloads it; a request still does.
    package var declined: Bool
    /// Consecutive basd starts that found its job in flight after an abnormal exit (schema v10).
    package var interruptedStarts: Int
    package var updatedAt: Date

    package init(
        appIdentifier: String, packID: String, entry: String? = nil, localVersion: Int? = nil, target: String? = nil,
        requested: Bool = false, failure: String? = nil, failureCode: Int? = nil, declined: Bool = false,
        interruptedStarts: Int = 0, updatedAt: Date = Date(timeIntervalSince1970: 0)
    ) {
        self.appIdentifier = appIdentifier
        self.packID = packID
        self.entry = entry
        self.localVersion = localVersion
        self.target = target
        self.requested = requested
        self.failure = failure
        self.failureCode = failureCode
        self.declined = declined
        self.interruptedStarts = interruptedStarts
        self.updatedAt = updatedAt
    }
}

/// An app that gets asset packs: one row of `pack_app`.
package struct StoredPackApp: Sendable, Hashable {
    package var appIdentifier: String
    /// `BAAssetPackPublicKey` (base64), if the manifest must be signed.
    package var publicKey: String?
    /// When the download manifest was last read, and why that failed if it did.
    package var checkedAt: Date?
    package var checkError: String?
    /// The error code of ``checkError`` (`docs/protocol.md`).
    package var checkErrorCode: Int?
    /// What is wrong with the app's signing key, if anything (an update removed it), for `ba apps`.
    package var keyWarning: String?
    /// It never declared `BAHasManagedAssetPacks` but used `AssetPackManager` (schema v6): it
    /// keeps its packs when an update's Info.plist does not declare them either.
    package var optedInByUse: Bool

    package init(
        appIdentifier: String, publicKey: String?, checkedAt: Date? = nil, checkError: String? = nil,
        checkErrorCode: Int? = nil, keyWarning: String? = nil, optedInByUse: Bool = false
    ) {
        self.appIdentifier = appIdentifier
        self.publicKey = publicKey
        self.checkedAt = checkedAt
        self.checkError = checkError
        self.checkErrorCode = checkErrorCode
        self.keyWarning = keyWarning
        self.optedInByUse = optedInByUse
    }
}
