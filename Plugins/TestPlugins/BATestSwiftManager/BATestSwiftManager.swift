// For tests only: a Swift extension that uses BADownloadManager from inside its entry points, to
// check the Swift side of the host-API table (schedule refused during downloads(for:), allowed
// after; startForegroundDownload refused from an extension; current downloads; cancel, also
// during downloads(for:) of the downloads its manifest's "cancel ID" lines name; exclusive
// control; the app group container; a delegate set in an extension).
import BackgroundAssets
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

struct BATestSwiftManager: BADownloaderExtension {
    // Never fetched: basd refuses it for its app group ("group.test" is no test app's), and a test
    // basd's allowedHosts (loopback) would refuse the host before any lookup.
    let download = BAURLDownload(
        identifier: "swift-scheduled", request: URLRequest(url: URL(string: "https://cdn.example.com/s.bin")!),
        fileSize: 1,
        applicationGroupIdentifier: "group.test")

    func code(_ body: () throws -> Void) -> String {
        do {
            try body()
            return "ok"
        } catch let error as BAError {
            return "\(error.code.rawValue) \(error.reason)"
        } catch {
            return "\(error)"
        }
    }

    func downloads(
        for request: BAContentRequest, manifestURL: URL, extensionInfo: BAAppExtensionInfo
    ) -> Set<
        BADownload
    > {
        BAHostLog("schedule: " + code { try BADownloadManager.shared.scheduleDownload(download) })
        BAHostLog("foreground: " + code { try BADownloadManager.shared.startForegroundDownload(download) })
        let current = (try? BADownloadManager.shared.fetchCurrentDownloads()) ?? []
        BAHostLog("current: " + current.map { "\($0.identifier)=\($0.state.rawValue)" }.joined(separator: ","))
        // Each manifest line "cancel ID" cancels that current download, as an `.update` dropping
        // stale content would (basd must apply it as it does for an event wake).
        let manifest = (try? String(contentsOf: manifestURL, encoding: .utf8)) ?? ""
        for line in manifest.split(separator: "\n") where line.hasPrefix("cancel ") {
            let identifier = String(line.dropFirst("cancel ".count))
            guard let stale = current.first(where: { $0.identifier == identifier }) else {
                BAHostLog("cancel \(identifier): not current")
                continue
            }
            BAHostLog("cancel \(identifier): " + code { try BADownloadManager.shared.cancel(stale) })
        }
        BAHostLog("remaining: \(extensionInfo.restrictedDownloadSizeRemaining.map(String.init) ?? "nil")")
        BADownloadManager.shared.withExclusiveControl(beforeDate: Date()) { acquired, error in
            BAHostLog("lock: \(acquired) \(error.map { "\($0)" } ?? "nil")")
        }
        return [download]
    }

    func backgroundDownload(_ finishedDownload: BADownload, finishedWithFileURL fileURL: URL) {
        BAHostLog("schedule-after-finish: " + code { try BADownloadManager.shared.scheduleDownload(download) })
        BAHostLog("cancel-unknown: " + code { try BADownloadManager.shared.cancel(download) })
        BAHostLog(
            "finished: \(finishedDownload.identifier) essential=\(finishedDownload.isEssential) state=\(finishedDownload.state.rawValue)"
        )
        // A delegate set in an extension is never called (the extension's methods are); basd logs why.
        let listener = Listener()
        BADownloadManager.shared.delegate = listener
        BADownloadManager.shared.delegate = nil
        for group in [finishedDownload.applicationGroupIdentifier, "group.other"] {
            let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: group)
            BAHostLog("container \(group): \(container?.path ?? "nil")")
        }
    }
}

final class Listener: BADownloadManagerDelegate {}

@_cdecl("ba_extension_descriptor")
public func baExtensionDescriptor() -> UnsafeRawPointer { BAExportExtension(BATestSwiftManager.self) }
