import BACore
import BADaemonProtocol
import BADownloadEngine
import BAExclusiveControl
import BAStore
import Foundation

/// A request refused: the error reply.
struct Refusal: Error {
    var code: Int
    var message: String

    init(_ code: Int, _ message: String) {
        self.code = code
        self.message = message
    }

    init(_ code: DaemonErrorCode, _ message: String) { self.init(code.rawValue, message) }

    var result: ServerMessage.Result { .error(code: code, message: message) }

    /// Apple's codes for the store's refusals; the rest is an internal error.
    init(_ error: BAStoreError) {
        switch error.code {
        case .duplicateIdentifier: self.init(AppleErrorCode.downloadAlreadyScheduled.rawValue, error.message)
        case .notScheduled, .unknownDownload: self.init(AppleErrorCode.downloadNotScheduled.rawValue, error.message)
        case .downloadEnded: self.init(AppleErrorCode.downloadNotScheduled.rawValue, error.message)
        case .unknownApp: self.init(DaemonErrorCode.callerConnectionNotAccepted, error.message)
        case .invalidArgument: self.init(AppleErrorCode.downloadInvalid.rawValue, error.message)
        default: self.init(DaemonErrorCode.internalError, "basd could not use its state: \(error)")
        }
    }
}

extension BAStore {
    /// The registered app `name`, or nil once `reply` has the refusal: not registered (invalid
    /// request), or the store could not be read (internal error; never taken for "not registered").
    func registeredApp(_ name: String, orReply reply: (ServerMessage.Result) -> Void) -> StoredApp? {
        let app: StoredApp?
        do { app = try self.app(name) } catch {
            reply(Refusal(.internalError, "basd could not read the app \(name): \(error)").result)
            return nil
        }
        guard let app else {
            reply(Refusal(.invalidRequest, "app \(name) is not registered with basd").result)
            return nil
        }
        return app
    }
}
