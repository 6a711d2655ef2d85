internal import BACore
internal import BAExtensionABI
internal import CBAExtension
import Dispatch
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Exports a Swift extension through the C ABI: returns the `ba_extension_descriptor` the host
/// loads, with every entry point calling a fresh instance of `type`.
///
/// `@main` on the extension type does this for you (see ``BADownloaderExtension/main()``); the
/// explicit export takes precedence over it, e.g. to give another name or version. Call it from
/// the one C symbol the host looks for, in one line:
/// ```swift
/// @_cdecl("ba_extension_descriptor")
/// public func baExtensionDescriptor() -> UnsafeRawPointer { BAExportExtension(MyExtension.self) }
/// ```
/// The function must be `public` (or it is not exported) and named `ba_extension_descriptor` in
/// `@_cdecl`. The descriptor is built once per type and lives as long as the process.
/// - Parameters:
///   - type: The extension type; a new instance serves every call.
///   - name: The name the host reports; defaults to the type's name.
///   - version: The version the host reports.
/// - Returns: A pointer to the constant descriptor.
public func BAExportExtension<E: BADownloaderExtension>(
    _ type: E.Type, name: String? = nil, version: String = "1.0.0"
)
    -> UnsafeRawPointer
{
    ExportedExtensions.descriptor(for: type, name: name ?? String(describing: type), version: version)
}

/// Descriptors built so far, one per type, never freed (the host may call them any time).
enum ExportedExtensions {
    /// What a descriptor's context points at: the type to instantiate.
    final class Box {
        let type: any BADownloaderExtension.Type
        init(_ type: any BADownloaderExtension.Type) { self.type = type }
    }

    private static let descriptors = Mutex<[ObjectIdentifier: UInt]>([:])

    static func descriptor(for type: any BADownloaderExtension.Type, name: String, version: String) -> UnsafeRawPointer
    {
        let address = descriptors.withLock { table -> UInt in
            if let existing = table[ObjectIdentifier(type)] { return existing }
            let arena = CArena()  // never freed: the strings must outlive every call
            let descriptor = UnsafeMutablePointer<ba_extension_desc>.allocate(capacity: 1)
            var value = ba_extension_desc()
            value.struct_size = UInt32(MemoryLayout<ba_extension_desc>.size)
            value.abi_major = UInt16(BA_EXTENSION_ABI_MAJOR)
            value.abi_minor = UInt16(BA_EXTENSION_ABI_MINOR)
            (value.name, value.name_length) = arena.string(name)
            (value.version, value.version_length) = arena.string(version)
            value.context = Unmanaged.passRetained(Box(type)).toOpaque()
            value.downloads_for_request = downloadsForRequestThunk
            value.download_finished = downloadFinishedThunk
            value.download_failed = downloadFailedThunk
            value.download_received_challenge = challengeThunk
            value.extension_will_terminate = willTerminateThunk
            // ABI 1.1: only a managed extension answers should_download (the host downloads
            // every pack for one without it).
            if type is any ManagedDownloaderExtension.Type { value.should_download = shouldDownloadThunk }
            descriptor.initialize(to: value)
            _ = Unmanaged.passRetained(arena)
            let address = UInt(bitPattern: descriptor)
            table[ObjectIdentifier(type)] = address
            return address
        }
        return UnsafeRawPointer(bitPattern: address)!
    }

    /// The instance serving the running entry point: `extensionWillTerminate()` goes to it, as
    /// on Apple's system, when the host warns before ending the call.
    private static let currentLock = NSLock()
    nonisolated(unsafe) private static var currentInstance: (any BADownloaderExtension)?

    /// A fresh instance for an entry point (extensions keep nothing between calls).
    static func instance(_ context: UnsafeMutableRawPointer?) -> (any BADownloaderExtension)? {
        guard let context else { return nil }
        let instance = Unmanaged<Box>.fromOpaque(context).takeUnretainedValue().type.init()
        currentLock.withLock { currentInstance = instance }
        return instance
    }

    /// The running instance, or a fresh one when no entry point is running.
    static func runningInstance(_ context: UnsafeMutableRawPointer?) -> (any BADownloaderExtension)? {
        if let running = currentLock.withLock({ currentInstance }) { return running }
        return instance(context)
    }

    static func download(_ pointer: UnsafePointer<ba_download>?) -> BAURLDownload? {
        readHostDownload(pointer).flatMap(BAURLDownload.init(record:))
    }

    static func string(_ pointer: UnsafePointer<CChar>?, _ length: Int) -> String {
        var wellFormed = true
        return copyString(pointer, length, wellFormed: &wellFormed)
    }
}

private let downloadsForRequestThunk: ba_downloads_for_request_fn = { context, host, info in
    guard let host, let info, let instance = ExportedExtensions.instance(context) else { return }
    ExtensionHostConnection.with(host) {
        let connection = ExtensionHostConnection(host: host)
        guard let request = BAContentRequest(rawValue: Int(info.pointee.request)) else {
            connection.log(BA_LOG_ERROR, "unknown content request \(info.pointee.request)")
            return
        }
        let path = ExportedExtensions.string(info.pointee.manifest_path, info.pointee.manifest_path_length)
        let remaining = info.pointee.restricted_download_size_remaining
        let essentialRemaining = info.pointee.restricted_essential_download_size_remaining
        let extensionInfo = BAAppExtensionInfo(
            restrictedDownloadSizeRemaining: remaining < 0 ? nil : Int(remaining),
            restrictedEssentialDownloadSizeRemaining: essentialRemaining < 0 ? nil : Int(essentialRemaining))
        let downloads = instance.downloads(
            for: request, manifestURL: URL(fileURLWithPath: path), extensionInfo: extensionInfo)
        // A Set has no order; hand them over sorted so the same manifest gives the same stream.
        for download in downloads.sorted(by: { $0.identifier < $1.identifier }) {
            guard let urlDownload = download as? BAURLDownload else {
                connection.log(BA_LOG_ERROR, "download \(download.identifier) is not a BAURLDownload; skipped")
                continue
            }
            do {
                try connection.add(urlDownload.record)
            } catch {
                connection.log(
                    BA_LOG_ERROR, "download \(download.identifier) was refused: \(error.localizedDescription)")
            }
        }
    }
}

private let downloadFinishedThunk: ba_download_finished_fn = { context, host, download, path, pathLength in
    guard let host, let instance = ExportedExtensions.instance(context),
        let download = ExportedExtensions.download(download)
    else { return }
    ExtensionHostConnection.with(host) {
        let fileURL = URL(fileURLWithPath: ExportedExtensions.string(path, pathLength))
        instance.backgroundDownload(download, finishedWithFileURL: fileURL)
    }
}

private let downloadFailedThunk: ba_download_failed_fn = { context, host, download, error in
    guard let host, let error, let instance = ExportedExtensions.instance(context),
        let download = ExportedExtensions.download(download)
    else { return }
    ExtensionHostConnection.with(host) {
        let domain = ExportedExtensions.string(error.pointee.domain, error.pointee.domain_length)
        let message = ExportedExtensions.string(error.pointee.message, error.pointee.message_length)
        let failure: any Error =
            if domain == BAErrorDomain, let code = BAError.Code(rawValue: Int(error.pointee.code)) {
                BAError(code, reason: message)
            } else {
                NSError(domain: domain, code: Int(error.pointee.code), userInfo: [NSLocalizedDescriptionKey: message])
            }
        instance.backgroundDownload(download, failedWithError: failure)
    }
}

/// Carries an async result back to the blocked C thread.
final class ChallengeResult: @unchecked Sendable {
    var disposition = URLSession.AuthChallengeDisposition.performDefaultHandling
    var credential: URLCredential?
}

final class IgnoringChallengeSender: NSObject, URLAuthenticationChallengeSender {
    func use(_ credential: URLCredential, for challenge: URLAuthenticationChallenge) {}
    func continueWithoutCredential(for challenge: URLAuthenticationChallenge) {}
    func cancel(_ challenge: URLAuthenticationChallenge) {}
    func performDefaultHandling(for challenge: URLAuthenticationChallenge) {}
    func rejectProtectionSpaceAndContinue(with challenge: URLAuthenticationChallenge) {}
}

private let challengeThunk: ba_download_challenge_fn = { context, host, download, challenge in
    guard let host, let challenge, let instance = ExportedExtensions.instance(context),
        let download = ExportedExtensions.download(download)
    else { return BA_CHALLENGE_PERFORM_DEFAULT_HANDLING }
    return ExtensionHostConnection.with(host) {
        let c = challenge.pointee
        let space = URLProtectionSpace(
            host: ExportedExtensions.string(c.host_name, c.host_name_length), port: Int(c.port),
            protocol: ExportedExtensions.string(c.protocol, c.protocol_length),
            realm: c.realm_length > 0 ? ExportedExtensions.string(c.realm, c.realm_length) : nil,
            authenticationMethod: ExportedExtensions.string(c.authentication_method, c.authentication_method_length))
        let urlChallenge = URLAuthenticationChallenge(
            protectionSpace: space, proposedCredential: nil, previousFailureCount: Int(c.previous_failure_count),
            failureResponse: nil, error: nil, sender: IgnoringChallengeSender())
        // The entry point is synchronous C; the Swift requirement is async. Block this (host)
        // thread until the async answer arrives on the concurrency pool.
        let result = ChallengeResult()
        let done = DispatchSemaphore(value: 0)
        let box = UncheckedBox((instance, download, urlChallenge))
        Task.detached {
            let (instance, download, urlChallenge) = box.value
            (result.disposition, result.credential) = await instance.backgroundDownload(
                download, didReceive: urlChallenge)
            done.signal()
        }
        done.wait()
        if result.disposition == .useCredential, let credential = result.credential, let user = credential.user {
            try? ExtensionHostConnection(host: host).useCredential(user: user, password: credential.password ?? "")
        }
        return Int32(result.disposition.rawValue)
    }
}

private let shouldDownloadThunk: ba_should_download_fn = { context, host, pack in
    // A pack that cannot be read is not the extension's to decline: download it.
    guard let host, let pack, let instance = ExportedExtensions.instance(context) as? any ManagedDownloaderExtension
    else { return 1 }
    return ExtensionHostConnection.with(host) {
        let value = pack.pointee
        let userInfo =
            value.user_info_length > 0 && value.user_info != nil
            ? Data(bytes: value.user_info, count: value.user_info_length) : nil
        let assetPack = AssetPack(
            id: ExportedExtensions.string(value.id, value.id_length), version: Int(value.version),
            downloadSize: Int(value.download_size), userInfo: userInfo)
        return instance.shouldDownload(assetPack) ? 1 : 0
    }
}

private let willTerminateThunk: ba_extension_will_terminate_fn = { context, host in
    guard let host, let instance = ExportedExtensions.runningInstance(context) else { return }
    ExtensionHostConnection.with(host) { LegacyEntryPoints.willTerminate(instance) }
}

/// Moves a non-Sendable value into a task that is awaited synchronously right away.
struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
