import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Whether any live (not zombie) process is still in process group `pgid`, from /proc.
package func processGroupExists(_ pgid: pid_t) -> Bool {
    guard kill(-pgid, 0) == 0 else { return false }
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.contains { entry in
        guard let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 2 && pid_t(fields[2]) == pgid && fields[0] != "Z" && fields[0] != "X"
    }
}

/// The live processes whose command line mentions `text` (e.g. a temporary folder a child was
/// given), as `pid: command line`, from /proc. Zombies have an empty command line and are left out.
package func processesMentioning(_ text: String) -> [String] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap { entry in
        guard Int32(entry) != nil, entry != String(getpid()),
            let raw = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"), !raw.isEmpty
        else { return nil }
        let line = String(decoding: raw.map { $0 == 0 ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
        return line.contains(text) ? "\(entry): \(line)" : nil
    }
}
