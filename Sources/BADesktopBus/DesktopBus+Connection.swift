internal import CSDBus
import Foundation

extension DesktopBus {
    /// The sd-bus connection, confined to the bus thread (sd-bus is not thread-safe): only work
    /// posted through ``DesktopBus/post(_:)`` touches it.
    final class Connection: @unchecked Sendable {
        private var bus: OpaquePointer?
        let kind: Kind
        private let log: @Sendable (String) -> Void
        /// The handlers of matches and pending calls, alive while sd-bus may call them (the
        /// matches' slots are floating: the bus owns them and frees them with itself).
        private var handlers: [Unmanaged<Handler>] = []
        /// Members whose sending failed (logged once each).
        private var failedSends: Set<String> = []

        init(bus: OpaquePointer, kind: Kind, log: @escaping @Sendable (String) -> Void) {
            self.bus = bus
            self.kind = kind
            self.log = log
        }

        /// A Swift closure behind sd-bus's C callback (its `userdata`).
        final class Handler {
            let handle: (OpaquePointer) -> Void
            init(_ handle: @escaping (OpaquePointer) -> Void) { self.handle = handle }
        }

        /// sd-bus's callback: hands the message to the handler its userdata points to.
        private static let trampoline: sd_bus_message_handler_t = { message, userdata, _ in
            guard let message, let userdata else { return 0 }
            Unmanaged<Handler>.fromOpaque(userdata).takeUnretainedValue().handle(message)
            return 0
        }

        var fd: Int32 { bus.map { sd_bus_get_fd($0) } ?? -1 }
        var events: Int32 { bus.map { sd_bus_get_events($0) } ?? 0 }

        /// How long `poll` may sleep for sd-bus (a call's timeout), in milliseconds; -1: no limit.
        var timeoutMilliseconds: Int32 {
            guard let bus else { return -1 }
            var until: UInt64 = 0
            guard sd_bus_get_timeout(bus, &until) >= 0, until != UInt64.max else { return -1 }
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let nowMicroseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
            guard until > nowMicroseconds else { return 0 }
            return Int32(clamping: (until - nowMicroseconds + 999) / 1_000)
        }

        /// Processes everything sd-bus has (replies, signals, queued writes); false when the bus
        /// went away.
        func process() -> Bool {
            guard let bus else { return false }
            while true {
                let result = sd_bus_process(bus, nil)
                if result < 0 { return false }
                if result == 0 { return true }
            }
        }

        func close() {
            if let bus { sd_bus_flush_close_unref(bus) }
            bus = nil
            for handler in handlers { handler.release() }
            handlers.removeAll()
        }

        func emitSignal(path: String, interface: String, member: String, arguments: [BusArgument]) {
            guard let bus else { return }
            var message: OpaquePointer?
            var result = sd_bus_message_new_signal(bus, &message, path, interface, member)
            if result >= 0, let message {
                result = Self.append(arguments, to: message)
                if result >= 0 { result = sd_bus_send(bus, message, nil) }
            }
            if let message { sd_bus_message_unref(message) }
            if result < 0, failedSends.insert(member).inserted {
                log(
                    "sending \(interface).\(member) on the \(kind.rawValue) bus failed: \(String(cString: strerror(-result)))"
                )
            }
        }

        func call(
            destination: String, path: String, interface: String, member: String, arguments: [BusArgument],
            timeout: Duration, reply: @escaping @Sendable (Result<BusReply, DesktopBusError>) -> Void
        ) {
            let operation = "calling \(interface).\(member) of \(destination) on the \(kind.rawValue) bus"
            func failed(_ result: Int32) {
                reply(.failure(DesktopBusError(operation, errno: -result, message: String(cString: strerror(-result)))))
            }
            guard let bus else { return failed(-ENOTCONN) }
            var message: OpaquePointer?
            var result = sd_bus_message_new_method_call(bus, &message, destination, path, interface, member)
            guard result >= 0, let message else { return failed(result) }
            defer { sd_bus_message_unref(message) }
            // A service that is not running is not started for basd (NetworkManager, logind).
            _ = sd_bus_message_set_auto_start(message, 0)
            result = Self.append(arguments, to: message)
            guard result >= 0 else { return failed(result) }
            var box: Unmanaged<Handler>?
            let handler = Handler { [weak self] answer in
                if let box {
                    box.release()
                    self?.handlers.removeAll { $0.toOpaque() == box.toOpaque() }
                }
                if let error = sd_bus_message_get_error(answer), sd_bus_error_is_set(error) != 0 {
                    reply(
                        .failure(
                            DesktopBusError(
                                operation, name: error.pointee.name.map { String(cString: $0) },
                                message: error.pointee.message.map { String(cString: $0) } ?? "an error reply")))
                } else {
                    reply(.success(BusReply(arguments: BusMessage.read(answer).arguments)))
                }
            }
            let retained = Unmanaged.passRetained(handler)
            box = retained
            handlers.append(retained)
            let microseconds = UInt64(max(1, timeout.components.seconds)) * 1_000_000
            result = sd_bus_call_async(bus, nil, message, Self.trampoline, retained.toOpaque(), microseconds)
            if result < 0 {
                handlers.removeLast()
                retained.release()
                failed(result)
            }
        }

        func addMatch(_ rule: String, handler: @escaping @Sendable (BusMessage) -> Void) {
            guard let bus else { return }
            let retained = Unmanaged.passRetained(Handler { message in handler(BusMessage.read(message)) })
            // Installed without waiting for the bus's answer (a failure is logged by sd-bus).
            let result = sd_bus_add_match_async(bus, nil, rule, Self.trampoline, nil, retained.toOpaque())
            if result < 0 {
                retained.release()
                log("watching \(rule) on the \(kind.rawValue) bus failed: \(String(cString: strerror(-result)))")
                return
            }
            handlers.append(retained)
        }

        /// Appends `arguments` to a message; a negative errno on failure.
        private static func append(_ arguments: [BusArgument], to message: OpaquePointer) -> Int32 {
            for argument in arguments {
                let result: Int32
                switch argument {
                case .value(let value):
                    result = appendBasic(value, to: message)
                case .dictionary(let entries):
                    result = appendDictionary(entries, to: message)
                }
                if result < 0 { return result }
            }
            return 0
        }

        private static func appendDictionary(
            _ entries: [BusArgument.DictionaryEntry], to message: OpaquePointer
        )
            -> Int32
        {
            var result = sd_bus_message_open_container(message, CChar(UInt8(ascii: "a")), "{sv}")
            for entry in entries where result >= 0 {
                result = sd_bus_message_open_container(message, CChar(UInt8(ascii: "e")), "sv")
                if result >= 0 { result = appendBasic(.string(entry.key), to: message) }
                if result >= 0 {
                    result = sd_bus_message_open_container(message, CChar(UInt8(ascii: "v")), entry.value.signature)
                }
                if result >= 0 { result = appendBasic(entry.value, to: message) }
                if result >= 0 { result = sd_bus_message_close_container(message) }  // v
                if result >= 0 { result = sd_bus_message_close_container(message) }  // e
            }
            if result >= 0 { result = sd_bus_message_close_container(message) }  // a
            return result
        }

        private static func appendBasic(_ value: BusValue, to message: OpaquePointer) -> Int32 {
            let type = CChar(bitPattern: value.signature.utf8.first ?? 0)
            func append<T: BitwiseCopyable>(_ value: T) -> Int32 {
                var copy = value
                return sd_bus_message_append_basic(message, type, &copy)
            }
            switch value {
            case .bool(let value): return append(Int32(value ? 1 : 0))
            case .byte(let value): return append(value)
            case .int32(let value): return append(value)
            case .uint32(let value): return append(value)
            case .int64(let value): return append(value)
            case .uint64(let value): return append(value)
            case .double(let value): return append(value)
            case .string(let string), .objectPath(let string):
                // A string is passed as the pointer itself, not a pointer to it.
                return string.withCString { sd_bus_message_append_basic(message, type, $0) }
            case .unsupported: return -EINVAL
            }
        }
    }
}
