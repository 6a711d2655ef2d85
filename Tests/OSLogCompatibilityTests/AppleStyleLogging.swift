// Logging code as Apple's samples write it: `import OSLog` alone, `Logger` unqualified, a static
// logger in an extension. It must compile unchanged (this file imports neither swift-log nor os).
import Foundation
import OSLog
import Testing

extension Logger {
    static let ext = Logger(subsystem: "com.example.apple-samplecode.BackgroundDownloadHandler", category: "extension")
}

struct AppleStyleLogging {
    static let signposter = OSSignposter(logger: .ext)

    @Test("Apple's Logger declarations and calls compile with import OSLog alone")
    func appleStyleCalls() {
        let identifier = "level-1"
        let error: any Error = CocoaError(.fileNoSuchFile)
        Logger.ext.debug("finished \(identifier, privacy: .public)")
        Logger.ext.error("Failed to move downloaded file: \(error)")
        Logger().trace("default logger")
        os_log("legacy %{public}@", log: OSLog(subsystem: "com.example", category: "legacy"), type: .debug, identifier)
        let state = Self.signposter.beginInterval("move")
        Self.signposter.endInterval("move", state)
        #expect(!Self.signposter.isEnabled)
    }
}

extension AppleStyleLogging {
    @Test("Apple's sample logs an optional error, objects and attributes unchanged")
    func optionalsObjectsAndAttributes() {
        var error: (any Error)? = nil
        Logger.ext.warning("Failed to acquire lock: \(error)")
        error = CocoaError(.fileLocking)
        Logger.ext.warning("Failed to acquire lock: \(error)")
        Logger.ext.warning("Failed to acquire lock: \(error, privacy: .public)")
        let object: NSObject? = NSString(string: "name")
        let url = NSURL(fileURLWithPath: "/tmp/x")
        Logger.ext.info("object \(object) \(url, privacy: .public) \(url, privacy: .public, attributes: "x")")
        Logger.ext.info("\("text", attributes: "a") \(3, attributes: "a") \(1.5, attributes: "a")")
    }
}
