internal import CSDBus
import Foundation

/// A signal or reply as basd reads it: its header fields and its top-level arguments, copied out
/// of sd-bus's message on the bus thread (so it outlives the message).
package struct BusMessage: Sendable {
    /// One top-level argument.
    package enum Argument: Sendable, Hashable {
        case value(BusValue)
        /// A variant holding a basic value.
        case variant(BusValue)
        /// An `a{sv}` dictionary (a `PropertiesChanged` signal's changes, a `GetAll` reply).
        case dictionary([String: BusValue])
        /// An `as` array (a `PropertiesChanged` signal's invalidated names).
        case strings([String])
        /// A file descriptor (type `h`), duplicated for the receiver, who must close it.
        case fileDescriptor(Int32)
        /// An argument of a type basd does not read, by signature.
        case unsupported(String)
    }

    package var path: String?
    package var interface: String?
    package var member: String?
    package var sender: String?
    package var arguments: [Argument]

    package init(
        path: String? = nil, interface: String? = nil, member: String? = nil, sender: String? = nil,
        arguments: [Argument]
    ) {
        self.path = path
        self.interface = interface
        self.member = member
        self.sender = sender
        self.arguments = arguments
    }

    /// The `index`th argument as a string.
    package func string(_ index: Int) -> String? {
        guard arguments.indices.contains(index), case .value(let value) = arguments[index] else { return nil }
        return value.stringValue
    }

    /// The `index`th argument as a boolean.
    package func bool(_ index: Int) -> Bool? {
        guard arguments.indices.contains(index), case .value(let value) = arguments[index] else { return nil }
        return value.boolValue
    }

    /// Reads `message` (an sd-bus message pointer) on the bus thread.
    static func read(_ message: OpaquePointer) -> BusMessage {
        func text(_ pointer: UnsafePointer<CChar>?) -> String? { pointer.map { String(cString: $0) } }
        var arguments: [Argument] = []
        while let argument = readArgument(message) { arguments.append(argument) }
        return BusMessage(
            path: text(sd_bus_message_get_path(message)), interface: text(sd_bus_message_get_interface(message)),
            member: text(sd_bus_message_get_member(message)), sender: text(sd_bus_message_get_sender(message)),
            arguments: arguments)
    }

    /// The next argument, or nil at the end (or on a malformed message).
    private static func readArgument(_ message: OpaquePointer) -> Argument? {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        guard sd_bus_message_peek_type(message, &type, &contents) > 0 else { return nil }
        let contentSignature = contents.map { String(cString: $0) } ?? ""
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "v"):
            guard sd_bus_message_enter_container(message, type, contents) >= 0 else { return nil }
            let value = readBasic(message, signature: contentSignature)
            _ = sd_bus_message_exit_container(message)
            return value.map { .variant($0) } ?? nil
        case UInt8(ascii: "a") where contentSignature == "{sv}":
            guard let dictionary = readDictionary(message) else { return nil }
            return .dictionary(dictionary)
        case UInt8(ascii: "a") where contentSignature == "s":
            guard sd_bus_message_enter_container(message, type, contents) >= 0 else { return nil }
            var strings: [String] = []
            while case .string(let string)? = readBasic(message, signature: "s") { strings.append(string) }
            _ = sd_bus_message_exit_container(message)
            return .strings(strings)
        case UInt8(ascii: "h"):
            var fd: Int32 = -1
            guard sd_bus_message_read_basic(message, type, &fd) > 0 else { return nil }
            // The message owns its descriptor and closes it with the message.
            return .fileDescriptor(fcntl(fd, F_DUPFD_CLOEXEC, 3))
        default:
            let signature = String(UnicodeScalar(UInt8(bitPattern: type)))
            if let value = readBasic(message, signature: signature) { return .value(value) }
            let whole = type == CChar(UInt8(ascii: "a")) ? "a" + contentSignature : signature
            guard sd_bus_message_skip(message, whole) >= 0 else { return nil }
            return .unsupported(whole)
        }
    }

    /// An `a{sv}` dictionary; entries whose values are not basic are kept as ``BusValue/unsupported(_:)``.
    private static func readDictionary(_ message: OpaquePointer) -> [String: BusValue]? {
        guard sd_bus_message_enter_container(message, CChar(UInt8(ascii: "a")), "{sv}") >= 0 else { return nil }
        var dictionary: [String: BusValue] = [:]
        while sd_bus_message_enter_container(message, CChar(UInt8(ascii: "e")), "sv") > 0 {
            var key: UnsafePointer<CChar>?
            guard sd_bus_message_read_basic(message, CChar(UInt8(ascii: "s")), &key) > 0, let key else { return nil }
            var type: CChar = 0
            var contents: UnsafePointer<CChar>?
            guard sd_bus_message_peek_type(message, &type, &contents) > 0,
                sd_bus_message_enter_container(message, CChar(UInt8(ascii: "v")), contents) >= 0
            else { return nil }
            let signature = contents.map { String(cString: $0) } ?? ""
            if let value = readBasic(message, signature: signature) {
                dictionary[String(cString: key)] = value
            } else {
                guard sd_bus_message_skip(message, signature) >= 0 else { return nil }
                dictionary[String(cString: key)] = .unsupported(signature)
            }
            _ = sd_bus_message_exit_container(message)  // v
            _ = sd_bus_message_exit_container(message)  // e
        }
        _ = sd_bus_message_exit_container(message)  // a
        return dictionary
    }

    /// A basic value of `signature`, or nil when it is not a basic type (nothing is read then).
    private static func readBasic(_ message: OpaquePointer, signature: String) -> BusValue? {
        guard signature.utf8.count == 1, let code = signature.utf8.first else { return nil }
        let type = CChar(bitPattern: code)
        func read<T: BitwiseCopyable>(_ initial: T) -> T? {
            var value = initial
            return sd_bus_message_read_basic(message, type, &value) > 0 ? value : nil
        }
        switch code {
        case UInt8(ascii: "b"): return read(Int32(0)).map { .bool($0 != 0) }
        case UInt8(ascii: "y"): return read(UInt8(0)).map { .byte($0) }
        case UInt8(ascii: "i"): return read(Int32(0)).map { .int32($0) }
        case UInt8(ascii: "u"): return read(UInt32(0)).map { .uint32($0) }
        case UInt8(ascii: "x"): return read(Int64(0)).map { .int64($0) }
        case UInt8(ascii: "t"): return read(UInt64(0)).map { .uint64($0) }
        case UInt8(ascii: "d"): return read(Double(0)).map { .double($0) }
        case UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"):
            var pointer: UnsafePointer<CChar>?
            guard sd_bus_message_read_basic(message, type, &pointer) > 0, let pointer else { return nil }
            let string = String(cString: pointer)
            return code == UInt8(ascii: "o") ? .objectPath(string) : .string(string)
        default: return nil
        }
    }
}
