import ArgumentParser
import BADaemonProtocol
import Foundation

/// `--socket`, shared by every command that talks to basd.
struct DaemonOptions: ParsableArguments {
    @Option(
        name: .customLong("socket"),
        help: ArgumentHelp(
            "basd's socket (default: $BA_SOCKET, else $XDG_RUNTIME_DIR/background-assets/basd.sock, else /tmp/background-assets-UID/basd.sock).",
            valueName: "path"))
    var socket: String?

    /// The socket to connect to.
    var socketPath: String { socket ?? DaemonProtocol.defaultSocketPath() }

    /// Connects as the CLI; prints why and exits 30 when basd cannot be reached.
    func connect(
        onEvent: @escaping @Sendable (DownloadEvent) -> Void = { _ in },
        onPackEvent: @escaping @Sendable (PackEvent) -> Void = { _ in },
        onClose: @escaping @Sendable (DaemonClientError) -> Void = { _ in }
    ) throws -> DaemonSession {
        do {
            return try tryConnect(onEvent: onEvent, onPackEvent: onPackEvent, onClose: onClose)
        } catch {
            throw DaemonSession.unavailable(error)
        }
    }

    /// Connects as the CLI (connect and `hello`).
    /// - Throws: ``DaemonClientError``, 55 when basd cannot be reached.
    func tryConnect(
        onEvent: @escaping @Sendable (DownloadEvent) -> Void = { _ in },
        onPackEvent: @escaping @Sendable (PackEvent) -> Void = { _ in },
        onClose: @escaping @Sendable (DaemonClientError) -> Void = { _ in }
    ) throws(DaemonClientError) -> DaemonSession {
        let client = try DaemonClient(
            socketPath: socketPath, client: ClientInfo(role: .cli, pid: getpid()), onEvent: onEvent,
            onPackEvent: onPackEvent, onClose: onClose)
        return DaemonSession(client: client)
    }
}

/// A connection to basd for one command: calls whose failures are printed and become `ba`'s
/// documented exit codes.
package struct DaemonSession {
    package let client: DaemonClient

    package init(client: DaemonClient) { self.client = client }

    var socketPath: String { client.socketPath }

    /// Sends `request` and returns basd's answer; on failure prints why and throws the exit code.
    package func call(_ request: Request) throws -> ServerMessage.Result {
        do {
            return try client.call(request)
        } catch {
            throw failure(error, request: request)
        }
    }

    /// Prints `error`, the failure of `request` on this connection, and returns the exit code for it:
    /// 31 when the connection is gone, 33 for an error reply.
    func failure(_ error: DaemonClientError, request: Request) -> ExitCode {
        // basd's own replies may carry 55 or 56 too (an unknown app, a request for another
        // role): only a closed connection means basd went away.
        if client.isClosed {
            printError("lost the connection to basd at \(socketPath): \(error.message)")
            return ExitCode(BAExitCode.daemonConnectionLost.rawValue)
        }
        if error.code == DaemonErrorCode.notServed.rawValue {
            printError("this basd does not serve `\(request.type)` yet (is it older than this ba?): \(error.message)")
        } else {
            printError("basd refused `\(request.type)`: \(error.message) (error \(error.code))")
        }
        return ExitCode(BAExitCode.daemonRefused.rawValue)
    }

    /// Prints that basd answered `request` with something other than `expected`; the exit code to throw.
    func unexpected(_ result: ServerMessage.Result, to request: Request) -> ExitCode {
        printError("basd answered `\(request.type)` with \(result), which this ba does not understand")
        return ExitCode(BAExitCode.daemonRefused.rawValue)
    }

    /// Prints why connecting (and `hello`) failed; exit code 30.
    static func unavailable(_ error: DaemonClientError) -> ExitCode {
        // DaemonClient's message names the socket and how to start basd; a refused hello says why.
        printError(error.message)
        return ExitCode(BAExitCode.daemonUnavailable.rawValue)
    }
}

/// Writes `ba: MESSAGE` on stderr.
package func printError(_ message: String) {
    FileHandle.standardError.write(Data("ba: \(message)\n".utf8))
}

/// `value` as one line of sorted-keys JSON (nil fields omitted).
func jsonLine(_ value: some Encodable) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    guard let data = try? encoder.encode(value) else { return "{}" }
    return String(decoding: data, as: UTF8.self)
}
