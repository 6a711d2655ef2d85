import Foundation

/// Logs a `printf`-style message to `log`, as Apple's `os_log`.
///
/// `%{public}@` shows a value, `%{private}d` hides one; without either, strings and objects
/// (`%@`, `%s`) are hidden as `<private>` and numbers shown, as in Apple's release logs
/// (``Logger`` has the rules). `%@` takes any value (written with `String(describing:)`); the
/// other conversions are `String(format:)`'s.
///
/// ```swift
/// os_log("downloaded %{public}@: %lld bytes", log: log, type: .info, identifier, size)
/// ```
/// - Parameters:
///   - message: The format, a string literal.
///   - dso: Apple's shared-object handle (unused here).
///   - log: The log (subsystem and category); ``OSLog/default`` by default.
///   - type: The level.
///   - args: The values for the format's conversions.
public func os_log(
    _ message: StaticString, dso: UnsafeRawPointer? = #dsohandle, log: OSLog = .default,
    type: OSLogType = .default, _ args: any CVarArg...
) {
    guard log.isEnabled(type: type) else { return }
    log.emit(
        OSLog.level(of: type), OSLogFormat.render(message.description, args), file: #fileID, function: #function,
        line: #line)
}

/// Logs `message` to `log` at `type`, as Apple's `os_log(_:dso:log:_:)` with an interpolated
/// message (the privacy rules of ``Logger``).
public func os_log(
    _ type: OSLogType, dso: UnsafeRawPointer? = #dsohandle, log: OSLog = .default, _ message: OSLogMessage
) {
    log.emit(OSLog.level(of: type), message.rendered, file: #fileID, function: #function, line: #line)
}

/// `os_log`'s format: `printf` conversions with Apple's `{public}`/`{private}` annotations.
enum OSLogFormat {
    static func render(_ format: String, _ args: [any CVarArg]) -> String {
        var output = ""
        var remaining = args[...]
        var characters = Substring(format)
        while let percent = characters.firstIndex(of: "%") {
            output += characters[..<percent]
            characters = characters[characters.index(after: percent)...]
            if characters.first == "%" {
                output += "%"
                characters = characters.dropFirst()
                continue
            }
            // {public}, {private}, {sensitive}, {private, mask.hash}, {public, …}
            var privacy = OSLogPrivacy.auto
            if characters.first == "{", let close = characters.firstIndex(of: "}") {
                let words = characters[characters.index(after: characters.startIndex)..<close]
                    .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                let mask: OSLogPrivacy.Mask = words.contains("mask.hash") ? .hash : .none
                if words.contains("public") {
                    privacy = .public
                } else if words.contains("private") {
                    privacy = .private(mask: mask)
                } else if words.contains("sensitive") {
                    privacy = .sensitive(mask: mask)
                } else {
                    privacy = .auto(mask: mask)
                }
                characters = characters[characters.index(after: close)...]
            }
            // flags, width, precision, length, conversion
            var specifier = "%"
            while let next = characters.first, "-+ #0123456789.*hlqjztL".contains(next) {
                if next == "*" {
                    let width = remaining.popFirst().flatMap { $0 as? any BinaryInteger }.map { Int($0) } ?? 0
                    specifier += String(width)
                } else {
                    specifier.append(next)
                }
                characters = characters.dropFirst()
            }
            guard let conversion = characters.first else {
                output += specifier
                break
            }
            characters = characters.dropFirst()
            guard let argument = remaining.popFirst() else {
                output += "<missing>"
                continue
            }
            let isObject = conversion == "@" || conversion == "s" || conversion == "S"
            output += Redaction.apply(
                privacy, isScalar: !isObject,
                {
                    if isObject { return String(describing: argument) }
                    return String(format: specifier + String(conversion), argument)
                }, align: .none)
        }
        output += characters
        return output
    }
}
