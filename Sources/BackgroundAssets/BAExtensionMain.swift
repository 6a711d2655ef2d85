import Foundation
import Synchronization

/// `@main` on a ``BADownloaderExtension`` type: how the system finds the extension in its library.
///
/// For `@main`, the Swift compiler emits a C `main` symbol in the extension's shared library that
/// calls the type's `static func main()`, which this library supplies (``BADownloaderExtension/main()``).
/// The runner looks for `ba_extension_descriptor`; when the extension does not export one itself,
/// it finds BackgroundAssets' weak definition (`CBAExtensionMain`), which locates that `main`
/// among the loaded libraries, calls it, and returns the descriptor of the type it registered.
enum ExtensionMain {
    /// The C `main` the Swift compiler emits for `@main` (`CBAExtensionMain` is linked, not
    /// imported: a client importing BackgroundAssets then needs no module map for it).
    typealias MainFunction = @convention(c) (Int32, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32

    /// The type `main()` registered, and whether a descriptor lookup is calling it.
    private struct State: @unchecked Sendable {  // a metatype is not Sendable; the mutex guards it
        var lookingUp = false
        var registered: (any BADownloaderExtension.Type)?
    }
    private static let state = Mutex(State())

    /// Called by `main()`: records the type when the runner is looking for it; says false when
    /// the library was run as a program instead.
    static func register(_ type: any BADownloaderExtension.Type) -> Bool {
        let box = UncheckedBox(type)
        return state.withLock { state in
            guard state.lookingUp else { return false }
            state.registered = box.value
            return true
        }
    }

    /// Calls the extension's `main` (once per process) and returns its type's descriptor.
    static func descriptor(calling main: MainFunction?, ambiguous: Bool) -> UnsafeRawPointer? {
        if let registered = state.withLock({ UncheckedBox($0.registered) }).value {
            return ExportedExtensions.descriptor(
                for: registered, name: String(describing: registered), version: "1.0.0")
        }
        guard let main else {
            let problem =
                ambiguous
                ? "several loaded libraries define main; export the extension with "
                    + "@_cdecl(\"ba_extension_descriptor\") and BAExportExtension instead"
                : "no @main BADownloaderExtension type and no ba_extension_descriptor export"
            FileHandle.standardError.write(Data("BackgroundAssets: \(problem)\n".utf8))
            return nil
        }
        state.withLock { $0.lookingUp = true }
        var arguments: [UnsafeMutablePointer<CChar>?] = [nil]
        _ = arguments.withUnsafeMutableBufferPointer { main(0, $0.baseAddress) }
        let registered = state.withLock { state in
            state.lookingUp = false
            return UncheckedBox(state.registered)
        }.value
        guard let registered else {
            FileHandle.standardError.write(
                Data("BackgroundAssets: the library's main did not register a BADownloaderExtension type\n".utf8))
            return nil
        }
        return ExportedExtensions.descriptor(for: registered, name: String(describing: registered), version: "1.0.0")
    }
}

/// Not API: called by the weak `ba_extension_descriptor` of `CBAExtensionMain` when an extension
/// is exported through `@main` (public so an optimized build keeps it).
@_cdecl("ba_main_extension_descriptor")
public func _baMainExtensionDescriptor(_ main: UnsafeMutableRawPointer?, _ ambiguous: Int32) -> UnsafeRawPointer? {
    ExtensionMain.descriptor(
        calling: main.map { unsafeBitCast($0, to: ExtensionMain.MainFunction.self) }, ambiguous: ambiguous != 0)
}

extension BADownloaderExtension {
    /// The entry point `@main` calls: it hands the type to the system, which creates an instance
    /// for every call (as Apple's `AppExtension` supplies `main()` for an extension).
    ///
    /// ```swift
    /// import BackgroundAssets
    ///
    /// @main
    /// struct GameAssets: BADownloaderExtension {
    ///     func downloads(for request: BAContentRequest, manifestURL: URL,
    ///                    extensionInfo: BAAppExtensionInfo) -> Set<BADownload> { [] }
    /// }
    /// ```
    /// Build the target as a shared library (`.library(type: .dynamic)` or
    /// `swiftc -emit-library`): the runner finds the type through the library's `main` symbol.
    /// Run as a program instead, it prints that it is an extension and exits with status 64.
    public static func main() {
        if ExtensionMain.register(Self.self) { return }
        FileHandle.standardError.write(
            Data(
                ("\(Self.self) is a Background Assets extension: build it as a shared library and run it "
                    + "with `ba run-extension LIBRARY` or install its app with `ba install`\n").utf8))
        exit(64)
    }
}
