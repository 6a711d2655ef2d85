extension PackIndex {
    /// Checks what a device relies on before it touches the disk for this index: the pack's id
    /// and version, and that every file path is relative, `/`-separated, with no empty, `.` or
    /// `..` component, no leading `/`, no NUL, at most 255 bytes a component, each path once,
    /// and no file that is also a folder of another; each file's chunks add up to its size, and
    /// a chunk name means one length.
    ///
    /// - Throws: ``PackError`` naming the first bad path or value (an index comes from the
    ///   network: a hostile one must not write outside its folder).
    package func checkInstallable() throws(PackError) {
        guard PackManifest.isValidID(id) else {
            throw PackError("the index names pack \"\(id)\", which is not a usable pack id")
        }
        guard version >= 1 else { throw PackError("the index of \(id) gives version \(version); versions start at 1") }
        var files: Set<String> = []
        var folders: Set<String> = []
        var lengths: [String: Int] = [:]
        for file in self.files {
            let components = try Self.checkPath(file.path, in: id)
            guard files.insert(file.path).inserted else {
                throw PackError("the index of \(id) lists \"\(file.path)\" twice")
            }
            var folder = ""
            for component in components.dropLast() {
                folder = folder.isEmpty ? String(component) : folder + "/" + component
                folders.insert(folder)
            }
            guard file.mode & ~0o777 == 0 else {
                throw PackError(
                    "the index of \(id) gives \"\(file.path)\" mode \(String(file.mode, radix: 8)); only permission bits (0644, 0755) are allowed"
                )
            }
            var sum: Int64 = 0
            for chunk in file.chunks {
                guard chunk.length > 0, chunk.storedLength > 0, Self.isSHA256(chunk.sha256) else {
                    throw PackError("the index of \(id) has a malformed chunk in \"\(file.path)\"")
                }
                if let known = lengths.updateValue(chunk.length, forKey: chunk.sha256), known != chunk.length {
                    throw PackError(
                        "the index of \(id) gives chunk \(chunk.sha256) two lengths, \(known) and \(chunk.length)")
                }
                sum += Int64(chunk.length)
            }
            guard sum == file.size, Self.isSHA256(file.sha256) else {
                throw PackError(
                    "the index of \(id) gives \"\(file.path)\" size \(file.size) but chunks of \(sum) bytes, or a malformed SHA-256"
                )
            }
        }
        if let clash = files.intersection(folders).sorted().first {
            throw PackError("the index of \(id) has \"\(clash)\" as a file and as a folder of other files")
        }
    }

    /// The components of a pack file path, or an error naming it.
    static func checkPath(_ path: String, in id: String) throws(PackError) -> [Substring] {
        let components = path.split(separator: "/", omittingEmptySubsequences: false)
        let bad =
            path.isEmpty || path.utf8.contains(0)
            || components.contains { $0.isEmpty || $0 == "." || $0 == ".." || $0.utf8.count > 255 }
        guard !bad else {
            throw PackError(
                "the index of \(id) has file path \"\(path)\": a path must be relative and '/'-separated, with no empty, '.' or '..' component"
            )
        }
        return components
    }

    private static func isSHA256(_ text: String) -> Bool {
        text.utf8.count == 64
            && text.utf8.allSatisfy {
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                    || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
            }
    }
}
