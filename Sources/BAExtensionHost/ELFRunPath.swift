import Foundation

/// The library search path an ELF shared object names for its dependencies (`DT_RUNPATH`, else
/// `DT_RPATH`), read from the file without loading it: for the verdict of a library that could not
/// load because a dependency is outside what the sandbox lets it read.
enum ELFRunPath {
    /// The folders, `$ORIGIN` replaced by the library's folder; empty when there is none or the
    /// file is not a 64-bit little-endian ELF object.
    static func folders(of path: String) -> [String] {
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped),
            let text = runPath(in: data)
        else { return [] }
        let origin = (path as NSString).deletingLastPathComponent
        return text.split(separator: ":").map {
            $0.replacingOccurrences(of: "${ORIGIN}", with: origin).replacingOccurrences(of: "$ORIGIN", with: origin)
        }
    }

    /// `DT_RUNPATH` (or `DT_RPATH`) of an ELF64 little-endian image, or nil.
    static func runPath(in data: Data) -> String? {
        let bytes = [UInt8](data.prefix(64))
        guard bytes.count == 64, bytes[0] == 0x7f, bytes[1] == 0x45, bytes[2] == 0x4c, bytes[3] == 0x46,
            bytes[4] == 2, bytes[5] == 1
        else { return nil }
        func integer(_ offset: Int, _ size: Int) -> UInt64? {
            guard offset >= 0, size <= 8, offset + size <= data.count else { return nil }
            var value: UInt64 = 0
            for index in (0..<size).reversed() {
                value = value << 8 | UInt64(data[data.startIndex + offset + index])
            }
            return value
        }
        guard let programHeaders = integer(0x20, 8), let entrySize = integer(0x36, 2), let count = integer(0x38, 2),
            entrySize >= 56, count <= 512, programHeaders < UInt64(data.count)
        else { return nil }
        var loads: [(vaddr: UInt64, offset: UInt64, size: UInt64)] = []
        var dynamic: (offset: UInt64, size: UInt64)?
        for index in 0..<Int(count) {
            let base = Int(programHeaders) + index * Int(entrySize)
            guard let type = integer(base, 4), let offset = integer(base + 8, 8), let vaddr = integer(base + 16, 8),
                let size = integer(base + 32, 8)
            else { return nil }
            if type == 1 { loads.append((vaddr, offset, size)) }
            if type == 2 { dynamic = (offset, size) }
        }
        guard let dynamic, dynamic.size <= 1 << 20 else { return nil }
        var stringTable: UInt64?
        var runPath: UInt64?
        var rPath: UInt64?
        var entry = Int(dynamic.offset)
        while entry + 16 <= Int(dynamic.offset + dynamic.size), let tag = integer(entry, 8), tag != 0 {
            let value = integer(entry + 8, 8)
            switch tag {
            case 5: stringTable = value
            case 15: rPath = value
            case 29: runPath = value
            default: break
            }
            entry += 16
        }
        guard let table = stringTable, let name = runPath ?? rPath,
            let load = loads.first(where: { table >= $0.vaddr && table < $0.vaddr + $0.size })
        else { return nil }
        var position = Int(table - load.vaddr + load.offset + name)
        var text: [UInt8] = []
        while position < data.count, text.count < 4096 {
            let byte = data[data.startIndex + position]
            if byte == 0 { break }
            text.append(byte)
            position += 1
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// For a loader message `NAME: cannot open shared object file…`: where `NAME` is in the
    /// library's search path on this side of the sandbox, or nil.
    static func missingDependency(in message: String, library: String) -> (name: String, path: String)? {
        guard let range = message.range(of: ": cannot open shared object file") else { return nil }
        let before = message[..<range.lowerBound]
        let name = String(before.split(whereSeparator: { $0 == " " || $0 == ":" }).last ?? "")
        guard !name.isEmpty, !name.contains("/") else { return nil }
        for folder in folders(of: library) {
            let candidate = folder + "/" + name
            if FileManager.default.isReadableFile(atPath: candidate) { return (name, candidate) }
        }
        return nil
    }
}
