import Foundation
import InMemoryLogging
import Logging
import OSLog
import Testing
import os

/// Apple's `import os` / `import OSLog` logging code, unchanged, over swift-log: levels,
/// subsystem and category, privacy, formats, `os_log`, signposts.
@Suite struct LoggerTests {
    let handler = InMemoryLogHandler()

    func logger(category: String = "tests") -> os.Logger {
        os.Logger(subsystem: "com.example.oslog", category: category, handler: handler)
    }

    var messages: [String] { handler.entries.map(\.message.description) }

    @Test("each Apple level reaches swift-log at its level, labelled with the subsystem and the category")
    func levels() {
        var backend = handler
        backend.logLevel = .trace
        let logger = os.Logger(subsystem: "com.example.oslog", category: "levels", handler: backend)
        logger.trace("t")
        logger.debug("d")
        logger.info("i")
        logger.notice("n")
        logger.log("l")
        logger.warning("w")
        logger.error("e")
        logger.critical("c")
        logger.fault("f")
        logger.log(level: .debug, "ld")
        logger.log(level: .info, "li")
        logger.log(level: .default, "l0")
        logger.log(level: .error, "le")
        logger.log(level: .fault, "lf")
        let levels: [Logging.Logger.Level] = [
            .debug, .debug, .info, .notice, .notice, .warning, .error, .critical, .critical,
            .debug, .info, .notice, .error, .critical,
        ]
        #expect(handler.entries.map(\.level) == levels)
        #expect(messages == ["t", "d", "i", "n", "l", "w", "e", "c", "f", "ld", "li", "l0", "le", "lf"])
        #expect(handler.entries.allSatisfy { $0.metadata["category"] == "levels" })
    }

    @Test("below the handler's level nothing is logged and nothing interpolated is evaluated")
    func disabledLevelsAreNotEvaluated() {
        let logger = logger()  // swift-log's default level: info
        var evaluated = false
        func expensive() -> String {
            evaluated = true
            return "x"
        }
        logger.debug("never \(expensive())")
        #expect(handler.entries.isEmpty)
        #expect(!evaluated)
    }

    @Test("privacy as in Apple's release logs: strings hidden by default, numbers shown, .public shown")
    func privacy() {
        let logger = logger()
        let name = "level-1"
        let path = "/home/user/secret"
        let count = 42
        let ratio = 0.5
        logger.info("finished \(name, privacy: .public) at \(path)")
        logger.info("\(count) files, \(ratio, format: .fixed(precision: 1)), ok \(true)")
        logger.info("\(path, privacy: .private) \(count, privacy: .private) \(name, privacy: .sensitive)")
        logger.info("auto \(path, privacy: .auto) \(count, privacy: .auto)")
        logger.info("type \(Int.self)")
        #expect(
            messages == [
                "finished level-1 at <private>",
                "42 files, 0.5, ok true",
                "<private> <private> <private>",
                "auto <private> 42",
                "type Int",
            ])
    }

    @Test("a hash mask shows a hash that is equal for equal values and is not the value")
    func hashMask() throws {
        let logger = logger()
        logger.info("\("secret", privacy: .private(mask: .hash)) \("secret", privacy: .private(mask: .hash))")
        logger.info("\("other", privacy: .sensitive(mask: .hash))")
        let words = messages[0].split(separator: " ").map(String.init)
        #expect(words.count == 4)
        #expect(messages[0].hasPrefix("<mask.hash: '"))
        #expect(!messages[0].contains("secret"))
        let first = words[0] + " " + words[1]
        let second = words[2] + " " + words[3]
        #expect(first == second)
        #expect(!messages[1].contains(String(first.dropFirst(12))))
    }

    @Test("errors, descriptions and other values interpolate; align and integer, float, bool formats")
    func formats() {
        let logger = logger()
        struct Failure: Error {}
        let error: any Error = CocoaError(.fileNoSuchFile)
        logger.error("failed: \(error, privacy: .public)")
        logger.error("failed: \(Failure(), privacy: .public)")
        logger.error("failed: \(error)")
        let url = URL(fileURLWithPath: "/tmp/x")
        logger.info("\(url, privacy: .public)")
        logger.info(
            "[\(7, format: .decimal(minDigits: 3))] [\(255, format: .hex)] [\(255, format: .hex(includePrefix: true, uppercase: true))]"
        )
        logger.info(
            "[\(8, format: .octal(includePrefix: true))] [\(5, format: .decimal(explicitPositiveSign: true))] [\(-5)]")
        logger.info("[\(1.5, format: .exponential)] [\(Float(2.25), format: .fixed(precision: 2))] [\(3.0)]")
        logger.info("[\(true, format: .answer)] [\("ab", align: .right(columns: 4), privacy: .public)]")
        logger.info("[\("ab", align: .left(columns: 4), privacy: .public)] [\(UInt8(9))] [\(Int64.min)]")
        #expect(messages[0].hasPrefix("failed: ") && messages[0].count > "failed: ".count)
        #expect(messages[1] == "failed: Failure()")
        #expect(messages[2] == "failed: <private>")
        #expect(messages[3] == "file:///tmp/x")
        #expect(messages[4] == "[007] [ff] [0xFF]")
        #expect(messages[5] == "[010] [+5] [-5]")
        #expect(messages[6] == "[1.500000e+00] [2.25] [3.000000]")
        #expect(messages[7] == "[YES] [  ab]")
        #expect(messages[8] == "[ab  ] [9] [-9223372036854775808]")
    }

    @Test("os_log: printf formats with {public}/{private}, the log's subsystem and category, its type's level")
    func osLog() {
        let log = OSLog(subsystem: "com.example.oslog", category: "legacy", handler: handler)
        os_log("plain", log: log)
        os_log("%{public}@ has %d bytes (%{private}@, %@)", log: log, type: .error, "level-1", 12, "secret", "hidden")
        os_log("%5.2f%% %{public}s %lld %x", log: log, type: .info, 3.14159, "s", Int64(9), 255)
        os_log(.info, log: log, "interpolated \(3) \("hidden")")
        os_log("dropped", log: log, type: .debug)
        os_log("nowhere", log: .disabled, type: .fault)
        #expect(
            messages == [
                "plain", "level-1 has 12 bytes (<private>, <private>)", " 3.14% s 9 ff", "interpolated 3 <private>",
            ])
        #expect(handler.entries.map(\.level) == [.notice, .error, .info, .info])
        #expect(handler.entries.allSatisfy { $0.metadata["category"] == "legacy" })
        #expect(log.isEnabled(type: .info) && !log.isEnabled(type: .debug))
        #expect(!OSLog.disabled.isEnabled(type: .fault))
        #expect(OSLogType.default.rawValue == 0 && OSLogType.fault.rawValue == 0x11)
        // Logger over an OSLog writes where the OSLog does.
        os.Logger(log).notice("through the log object")
        #expect(messages.last == "through the log object")
    }

    @Test("signposts are no-ops that still run the interval's work")
    func signposts() throws {
        let signposter = OSSignposter(logger: logger())
        let id = signposter.makeSignpostID()
        let state = signposter.beginInterval("load", id: id, "loading \(3)")
        signposter.emitEvent("tick", id: id)
        signposter.endInterval("load", state)
        #expect(state.signpostID == id)
        let result = signposter.withIntervalSignpost("work") { 6 * 7 }
        #expect(result == 42)
        #expect(!signposter.isEnabled)
        #expect(!OSSignposter.disabled.isEnabled)
        #expect(handler.entries.isEmpty)
    }

    @Test("BA_LOG_PRIVATE_DATA=1 shows private values (read once, so in a process of its own)")
    func privateDataShownWhenAsked() async {
        await #expect(processExitsWith: .success) {
            setenv("BA_LOG_PRIVATE_DATA", "1", 1)
            let handler = InMemoryLogHandler()
            let logger = os.Logger(subsystem: "com.example.oslog", category: "private", handler: handler)
            logger.info("\("visible") \("too", privacy: .private) \("hidden", privacy: .sensitive)")
            let message = handler.entries.first?.message.description
            exit(message == "visible too <private>" ? 0 : 1)
        }
    }

    @Test("optional errors and objects: the value or (null), private by default; attributes change nothing shown")
    func optionalErrorsAndObjects() {
        let logger = logger()
        var error: (any Error)? = nil
        logger.info("lock: \(error, privacy: .public)")
        error = CocoaError(.fileLocking)
        logger.info("lock: \(error, privacy: .public)")
        logger.info("lock: \(error)")
        let plain: any Error = CocoaError(.fileLocking)
        logger.info("plain: \(plain, privacy: .public, attributes: "x")")
        var object: NSObject? = nil
        logger.info("object: \(object, privacy: .public)")
        object = NSString(string: "name")
        logger.info("object: \(object, privacy: .public) \(object)")
        logger.info("\("text", privacy: .public, attributes: "a") \(7, attributes: "a") \(0.5, attributes: "a")")
        let described = String(describing: CocoaError(.fileLocking))
        #expect(
            messages == [
                "lock: (null)", "lock: \(described)", "lock: <private>", "plain: \(described)",
                "object: (null)", "object: name <private>", "text 7 0.500000",
            ])
    }
}
