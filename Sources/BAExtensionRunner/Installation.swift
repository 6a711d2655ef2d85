#if canImport(Glibc)
    import Glibc
#endif

/// Where the installation this runner belongs to keeps `libBackgroundAssets.so`: next to the
/// runner in a build folder (`.build/debug`); in `PREFIX/lib/swift-background-assets` of an
/// installed prefix (`PREFIX/bin/ba-extension-runner`; scripts/install.sh), or `PREFIX/lib` (an
/// older layout).
enum Installation {
    /// The runner's own folder, then the prefix's private and `lib` folders; empty when
    /// `/proc/self/exe` cannot be read.
    static func libraryDirectories() -> [String] {
        var executable = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &executable, executable.count - 1)
        guard length > 0 else { return [] }
        let path = String(decoding: executable[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return libraryDirectories(ofExecutable: path)
    }

    /// ``libraryDirectories()`` for the executable at `path` (absolute).
    static func libraryDirectories(ofExecutable path: String) -> [String] {
        guard let slash = path.lastIndex(of: "/") else { return [] }
        let folder = String(path[..<slash])
        guard let parentSlash = folder.lastIndex(of: "/") else { return [folder] }
        let prefix = folder[..<parentSlash]
        return [folder, prefix + "/lib/swift-background-assets", prefix + "/lib"]
    }
}
