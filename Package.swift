// swift-tools-version:6.0
import PackageDescription

// C plugins used only by the tests: each is a misbehaving extension (see Plugins/TestPlugins).
let testPlugins = [
    "BATestHang", "BATestCrash", "BATestHog", "BATestWrongABI", "BATestNoDescriptor",
    "BATestFlood", "BATestBadIdentifiers", "BATestHostAPI", "BATestExit", "BATestDescriptors",
    "BATestEscape", "BATestEvents", "BATestChatty", "BATestShouldDownload", "BATestABI10",
]

let package = Package(
    name: "swift-background-assets",
    products: [
        // The public API (docs/public-api.md); every other library target is internal, with `package` access.
        // Dynamic, so an extension built outside this package links against it (-lBackgroundAssets).
        .library(name: "BackgroundAssets", type: .dynamic, targets: ["BackgroundAssets"]),
        // Re-exports BackgroundAssets and BAExtensionHost (BAExtensionTester, BAExtensionSupervisor, the run result).
        .library(name: "BackgroundAssetsTesting", targets: ["BackgroundAssetsTesting"]),
        .executable(name: "ba", targets: ["ba"]),
        .executable(name: "ba-extension-runner", targets: ["ba-extension-runner"]),
        .executable(name: "ba-asset-server", targets: ["ba-asset-server"]),
        .executable(name: "basd", targets: ["basd"]),
        // Apple's `import os` / `import OSLog` logging API (Logger, OSLog, os_log, OSSignposter) over swift-log.
        // Dynamic, as BackgroundAssets (-los outside SwiftPM); OSLog only re-exports os.
        .library(name: "os", type: .dynamic, targets: ["os"]),
        .library(name: "OSLog", targets: ["OSLog"]),
        // Empty: lets Apple's `import ExtensionFoundation` compile (see its one source file).
        .library(name: "ExtensionFoundation", targets: ["ExtensionFoundation"]),
        // Sample and test extensions: a dynamic library product is how SwiftPM writes the .so the runner loads (not API).
        .library(name: "SampleSwiftExtension", type: .dynamic, targets: ["SampleSwiftExtension"]),
        .library(name: "SampleCExtension", type: .dynamic, targets: ["SampleCExtension"]),
        .library(name: "BATestSwiftManager", type: .dynamic, targets: ["BATestSwiftManager"]),
        .library(name: "AppleCompatibilityExtension", type: .dynamic, targets: ["AppleCompatibilityExtension"]),
        .library(name: "BATestAppleSample", type: .dynamic, targets: ["BATestAppleSample"]),
        .library(name: "BATestManagedExtension", type: .dynamic, targets: ["BATestManagedExtension"]),
        .library(name: "BATestSelfHostedPacks", type: .dynamic, targets: ["BATestSelfHostedPacks"]),
        .library(
            name: "AppleCompatibilityManagedExtension", type: .dynamic, targets: ["AppleCompatibilityManagedExtension"]),
    ] + testPlugins.map { .library(name: $0, type: .dynamic, targets: [$0]) },
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // FilePath and FileDescriptor, Apple's `System` types in AssetPackManager's signatures.
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
    ],
    targets: [
        // C: the extension ABI header, libffi, and Linux calls Swift's Glibc module lacks.
        .target(name: "CBAExtension"),
        .systemLibrary(name: "CFFI", pkgConfig: "libffi", providers: [.apt(["libffi-dev"])]),
        .target(name: "CBASystem", cSettings: [.define("_GNU_SOURCE")]),
        // The weak `ba_extension_descriptor` that finds an extension exported by `@main`.
        .target(name: "CBAExtensionMain", cSettings: [.define("_GNU_SOURCE")]),
        // libba_client, an app's asset packs from C (ba_client.h): plain C, no Swift runtime.
        // scripts/install.sh builds the installed library with cc; the tests link this target.
        .target(name: "CBAClient"),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        // sd-bus, basd's D-Bus client (BADesktopBus).
        .systemLibrary(name: "CSDBus", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),

        // Foundation-free: the runner <-> host wire format and the download rules.
        .target(name: "BACore"),
        // SHA-256 (libcrypto), streaming and of a file: what the downloads, the packs and basd check
        // bytes with, without linking libcurl.
        .target(
            name: "BAHashing", dependencies: ["CCrypto", .product(name: "SystemPackage", package: "swift-system")]),
        // The download manifest's one model (formats 1 to 3, Apple's self-hosted shape), its bounded
        // decoding, the pack limits and PackError: what BackgroundAssets reads an app's own manifest
        // with (AssetPackManifest(contentsOf:appGroupID:)), kept free of libzstd and libcrypto.
        .target(
            name: "BAPackManifest",
            dependencies: ["BACore", .product(name: "SystemPackage", package: "swift-system")]),
        // Asset packs: content-defined chunking, building and publishing, assembly on the device.
        // Re-exports BAPackManifest.
        .target(
            name: "BAPacks",
            dependencies: [
                "BACore", "BAPackManifest", "BAHashing", "CZstd", "CCrypto", "CBASystem",
                .product(name: "SystemPackage", package: "swift-system"),
            ]),
        // The fuzzer over the pack index and download manifest decoders (docs/fuzzing.md).
        .executableTarget(name: "PackFuzzer", dependencies: ["BAPacks"]),
        // An app directory's Info.plist, read and checked (Foundation's PropertyListSerialization).
        .target(name: "BAAppBundle", dependencies: ["BACore"]),
        // When basd wakes extensions: periodic intervals, daily runtime allowance, quarantine, settings.
        .target(name: "BAScheduling"),
        // basd's settings file (`config.json`): its keys, defaults and checks.
        .target(name: "BASettings", dependencies: ["BACore", "BAScheduling"]),
        // Purgeable finished assets: which are unmodified and unused, and what goes under disk pressure.
        .target(name: "BAPurge", dependencies: ["CBASystem"]),
        // Foundation-free: the app group's exclusive-control lock (a kernel flock).
        .target(name: "BAExclusiveControl"),
        // Foundation-free: copying values to and from the C ABI structs, shared by both sides.
        .target(name: "BAExtensionABI", dependencies: ["BACore", "CBAExtension"]),

        // Public API (Apple's names).
        // In an app process it talks to basd (BADaemonProtocol) and takes the app group's lock itself;
        // it reads a self-hosted manifest with BAPackManifest (never BAPacks: libzstd, libcrypto).
        .target(
            name: "BackgroundAssets",
            dependencies: [
                "BACore", "BAExtensionABI", "CBAExtension", "BADaemonProtocol", "BAExclusiveControl",
                "CBAExtensionMain", "BAPackManifest", .product(name: "SystemPackage", package: "swift-system"),
            ]),

        // The download engine: libcurl multi on one thread, resume, retries, integrity.
        // Foundation-free HTTP pieces shared by the engine and the asset server (HTTP dates).
        .target(name: "BAHTTP"),
        .target(
            name: "BADownloadEngine",
            dependencies: [
                "BACore", "BAHTTP", "BAHashing", "CCurl", "CCrypto", "CBASystem",
                .product(name: "HeapModule", package: "swift-collections"),
            ]),

        // The runner process (kept free of Foundation: it is spawned for every call).
        .target(
            name: "BAExtensionRunner",
            dependencies: [
                "BACore", "BAExtensionABI", "BAExclusiveControl", "CBAExtension", "CFFI", "CBASystem",
            ]),
        .executableTarget(name: "ba-extension-runner", dependencies: ["BAExtensionRunner"]),

        // The supervisor: spawns the runner under a deadline and a memory cap, returns a verdict.
        .target(
            name: "BAExtensionHost",
            dependencies: ["BACore", "BAExclusiveControl", "CBASystem"]),
        .target(
            name: "BackgroundAssetsTesting",
            dependencies: ["BackgroundAssets", "BAExtensionHost", "BACore"]),

        // basd's durable state: apps, downloads, the event log, extension runs (SQLite, docs/state.md).
        .target(name: "BAStore", dependencies: ["BACore", .product(name: "GRDB", package: "GRDB.swift")]),

        // basd's D-Bus connections (session and system bus, sd-bus on a thread of their own):
        // launcher progress, NetworkManager, power-profiles-daemon (docs/operations.md).
        .target(name: "BADesktopBus", dependencies: ["CSDBus", "CBASystem"]),

        // basd: the client <-> daemon wire protocol (docs/protocol.md), its unix-socket server, the executable.
        .target(name: "BADaemonProtocol", dependencies: ["BACore"]),
        .target(
            name: "BADaemon",
            dependencies: [
                "BADaemonProtocol", "BAStore", "BAExclusiveControl", "BADownloadEngine", "BAHashing", "BAExtensionHost",
                "CBASystem",
                "BACore", "BAAppBundle", "BAScheduling", "BASettings", "BAPurge", "BAPacks", "BADesktopBus",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // basd's command line; `ba` runs it too when started as `basd` (one binary in the package).
        .target(
            name: "BADaemonCommand",
            dependencies: [
                "BADaemon", "BADaemonProtocol", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        .executableTarget(name: "basd", dependencies: ["BADaemonCommand"]),

        // Command line.
        .target(
            name: "BACommands",
            dependencies: [
                "BAExtensionHost", "BackgroundAssets", "BADownloadEngine", "BADaemonProtocol", "BAAppBundle",
                "BACore", "BAPacks", "CBASystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        // `ba demo`: the whole system on an embedded asset server (kept out of BACommands, so the
        // other commands do not link an HTTP server).
        .target(
            name: "BADemo",
            dependencies: [
                "BACommands", "BADaemonProtocol", "BADownloadEngine", "BAHashing", "BAAssetServer", "BASampleAssets",
                "BAPacks", "CBASystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        .executableTarget(
            name: "ba",
            dependencies: [
                "BACommands", "BADemo", "BADaemonCommand",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),

        // Apple's logging API for code written for Apple's systems: `os` over swift-log, `OSLog` re-exports it.
        // No C module: a package built next to `os` may import it (#if canImport(os)), and would not find one.
        .target(name: "os", dependencies: [.product(name: "Logging", package: "swift-log")]),
        .target(name: "OSLog", dependencies: ["os"]),
        // Apple's extension framework has nothing Linux needs; the module exists so
        // `import ExtensionFoundation` in Apple's snippets compiles (docs/apple-api-compatibility.md).
        .target(name: "ExtensionFoundation"),

        // Sample extensions.
        .target(name: "SampleSwiftExtension", dependencies: ["BackgroundAssets"], path: "Plugins/SampleSwiftExtension"),
        .target(name: "SampleCExtension", dependencies: ["CBAExtension"], path: "Plugins/SampleCExtension"),
        // The sample app (`ba demo` runs it).
        .executableTarget(name: "SampleApp", dependencies: ["BackgroundAssets"], path: "Examples/SampleApp/Sources"),
        .target(
            name: "BATestSwiftManager", dependencies: ["BackgroundAssets"],
            path: "Plugins/TestPlugins/BATestSwiftManager"),
        // A ManagedDownloaderExtension that declines the pack "extras".
        .target(
            name: "BATestManagedExtension", dependencies: ["BackgroundAssets", "ExtensionFoundation"],
            path: "Plugins/TestPlugins/BATestManagedExtension"),
        // An unmanaged extension returning the packs of a self-hosted AssetPackManifest (OS 26).
        .target(
            name: "BATestSelfHostedPacks", dependencies: ["BackgroundAssets", "ExtensionFoundation"],
            path: "Plugins/TestPlugins/BATestSelfHostedPacks"),
        // Apple's sample finished-file handler, unchanged (Swift 5 mode, as Apple's samples are).
        .target(
            name: "BATestAppleSample", dependencies: ["BackgroundAssets", "os"],
            path: "Plugins/TestPlugins/BATestAppleSample",
            swiftSettings: [.swiftLanguageMode(.v5)]),

        // A loopback HTTP/1.1 asset server that misbehaves on demand: the download engine's test peer.
        .target(
            name: "BAAssetServer",
            dependencies: [
                "BAHTTP",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]),
        .executableTarget(
            name: "ba-asset-server",
            dependencies: ["BAAssetServer", .product(name: "ArgumentParser", package: "swift-argument-parser")]),

        // The sample app's generated asset bytes (Examples/SampleApp): for `ba demo` and the tests.
        .target(name: "BASampleAssets"),

        // Benchmarks (not tests): Benchmarks/run.sh.
        .executableTarget(
            name: "BasdBenchmark", dependencies: ["BackgroundAssets", "BADaemonProtocol"],
            path: "Benchmarks/BasdBenchmark"),
        .executableTarget(
            name: "ExtensionHostBenchmark",
            dependencies: ["BAExtensionHost", "BackgroundAssets", "BackgroundAssetsTesting", "CBASystem"],
            path: "Benchmarks/ExtensionHostBenchmark"),

        // Tests.
        // What every suite starts processes with: the child-process wrapper, the basd harness, temporary folders.
        .target(
            name: "BATestSupport", dependencies: ["BAExtensionHost", "BADaemonProtocol", "CBASystem"],
            path: "Tests/BATestSupport"),
        .testTarget(
            name: "BackgroundAssetsTests",
            dependencies: [
                "BackgroundAssets", "BACore", "BAExtensionABI", "CBAExtension", "BADaemonProtocol", "BAPackManifest",
            ]),
        .testTarget(name: "BACoreTests", dependencies: ["BACore", "CBAExtension"]),
        .testTarget(
            name: "BAPacksTests",
            dependencies: [
                "BAPacks", "BACore", "BAHashing", "BATestSupport",
                .product(name: "SystemPackage", package: "swift-system"),
            ]),
        .testTarget(
            name: "BAHashingTests",
            dependencies: ["BAHashing", .product(name: "SystemPackage", package: "swift-system")]),
        .testTarget(name: "BAAppBundleTests", dependencies: ["BAAppBundle"]),
        .testTarget(
            name: "OSLogCompatibilityTests",
            dependencies: [
                "os", "OSLog", "BATestSupport", .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ]),
        // The scheduling rules, and basd's settings file (BASettings) built on them.
        .testTarget(name: "BASchedulingTests", dependencies: ["BAScheduling", "BASettings", "BATestSupport"]),
        .testTarget(name: "BAPurgeTests", dependencies: ["BAPurge"]),
        // The D-Bus layer against real dbus-daemons and Python stand-ins (skipped without them).
        .testTarget(name: "BADesktopBusTests", dependencies: ["BADesktopBus", "BATestSupport"]),
        .testTarget(name: "BAExclusiveControlTests", dependencies: ["BAExclusiveControl", "BATestSupport"]),
        .testTarget(
            name: "BAExtensionHostTests",
            dependencies: [
                "BAExtensionHost", "BackgroundAssetsTesting", "BATestSupport", "BackgroundAssets", "BAExclusiveControl",
                "BACore", "BAExtensionRunner",
            ]),
        .testTarget(name: "EndToEndTests", dependencies: ["BATestSupport", "BAAssetServer"]),
        .testTarget(name: "BAAssetServerTests", dependencies: ["BAAssetServer", "BAHTTP", "BATestSupport"]),
        .testTarget(name: "BASampleAssetsTests", dependencies: ["BASampleAssets", "CCrypto"]),
        .testTarget(
            name: "BADownloadEngineTests",
            dependencies: ["BACore", "BADownloadEngine", "BAAssetServer", "BATestSupport"]),
        // A child process the crash-safety test kills with SIGKILL mid-write.
        .executableTarget(name: "BAStoreCrashProbe", dependencies: ["BAStore"], path: "Tests/BAStoreCrashProbe"),
        .testTarget(
            name: "BAStoreTests",
            dependencies: [
                "BAStore", "BAStoreCrashProbe", "BATestSupport", "BACore",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]),
        // An app (public BackgroundAssets API only) driven over stdin by the app-client tests.
        .executableTarget(name: "BATestApp", dependencies: ["BackgroundAssets", "CCrypto"], path: "Tests/BATestApp"),
        .testTarget(
            name: "BAAppClientTests",
            dependencies: ["BATestSupport", "BADaemonProtocol", "BAAssetServer", "basd", "BATestApp"]),
        .testTarget(
            name: "BADaemonTests",
            dependencies: [
                "BADaemonProtocol", "BADaemon", "basd", "BATestSupport", "BAAssetServer", "BASampleAssets", "CBASystem",
                "BAStore", "BAScheduling", "BASettings", "BAExtensionHost", "BACore", "BAPacks", "BATestApp",
                "BADownloadEngine", "BAHashing", "BADesktopBus", "CBAClient",
            ]),
        // Apple-style code as Apple developers write it, built in Swift 5 mode (the tests
        // type-check it in Swift 6 mode too): an @main extension and app-side code.
        .target(
            name: "AppleCompatibilityExtension", dependencies: ["BackgroundAssets", "os"],
            path: "Tests/AppleCompatibilityExtension", swiftSettings: [.swiftLanguageMode(.v5)]),
        // Apple's managed-extension snippet (`ManagedDownloaderExtension`), unchanged.
        .target(
            name: "AppleCompatibilityManagedExtension", dependencies: ["BackgroundAssets", "ExtensionFoundation"],
            path: "Tests/AppleCompatibilityManagedExtension", swiftSettings: [.swiftLanguageMode(.v5)]),
        .testTarget(
            name: "AppleCompatibilityTests",
            dependencies: ["BackgroundAssetsTesting", "BackgroundAssets", "BATestSupport", "BACore"],
            swiftSettings: [.swiftLanguageMode(.v5)]),
    ] + testPlugins.map { .target(name: $0, dependencies: ["CBAExtension"], path: "Plugins/TestPlugins/\($0)") },
    swiftLanguageModes: [.v6]
)
