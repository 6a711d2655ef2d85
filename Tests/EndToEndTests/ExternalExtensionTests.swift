import BATestSupport
import Foundation
import Testing

/// Extensions built outside the package, exactly as docs/writing-an-extension-*.md say.
@Suite struct ExternalExtensionTests {
    let ba = BuildProducts.executable("ba")

    @Test func aSwiftExtensionBuiltWithSwiftc() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write(
            "Hello.swift",
            """
            import BackgroundAssets
            import Foundation
            #if canImport(FoundationNetworking)
            import FoundationNetworking
            #endif

            struct HelloExtension: BADownloaderExtension {
                func downloads(for request: BAContentRequest, manifestURL: URL,
                               extensionInfo: BAAppExtensionInfo) -> Set<BADownload> {
                    let url = URL(string: "https://cdn.example.com/hello.bin")!
                    return [BAURLDownload(identifier: "hello", request: URLRequest(url: url),
                                          essential: request != .periodic, fileSize: 5,
                                          applicationGroupIdentifier: "group.com.example.hello")]
                }
            }

            @_cdecl("ba_extension_descriptor")
            public func baExtensionDescriptor() -> UnsafeRawPointer { BAExportExtension(HelloExtension.self) }
            """)
        let build = BuildProducts.directory.path
        let compile = try await runProcess(
            "/usr/bin/env",
            [
                "swiftc", "-emit-library", "-o", "libHello.so", "Hello.swift",
                "-I", "\(build)/Modules",
                "-Xcc", "-fmodule-map-file=\(BuildProducts.source("Sources/CBAExtension/include/module.modulemap"))",
                "-L", build, "-lBackgroundAssets", "-Xlinker", "-rpath", "-Xlinker", build,
            ], currentDirectory: directory.path)
        #expect(compile.status == 0, "\(compile.stderr)")
        let run = try await runProcess(
            ba,
            ["run-extension", directory.url.appendingPathComponent("libHello.so").path, "--event", "install", "--json"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains(#""identifier" : "hello""#))
        #expect(run.stdout.contains(#""essential" : true"#))
    }

    @Test func aCExtensionBuiltWithCC() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write(
            "hello.c",
            """
            #include <ba_extension.h>

            static void downloads(void *context, const ba_host_api *host, const ba_content_request_info *request) {
                (void)context;
                ba_download download = {0};
                download.struct_size = sizeof(download);
                download.identifier = "hello";
                download.identifier_length = 5;
                download.url = "https://cdn.example.com/hello.bin";
                download.url_length = sizeof("https://cdn.example.com/hello.bin") - 1;
                download.file_size = 5;
                download.priority = BA_PRIORITY_DEFAULT;
                if (request->request != BA_CONTENT_REQUEST_PERIODIC) download.flags = BA_DOWNLOAD_FLAG_ESSENTIAL;
                int32_t code = 0;
                if (host->add_download(&download, &code) != BA_OK) host->log(BA_LOG_ERROR, BA_STR("refused"));
                host->log(BA_LOG_INFO, BA_STR("hello from C"));
            }

            static const ba_extension_desc descriptor = {
                .struct_size = sizeof(ba_extension_desc),
                .abi_major = BA_EXTENSION_ABI_MAJOR,
                .abi_minor = BA_EXTENSION_ABI_MINOR,
                .name = "HelloC", .name_length = 6,
                .version = "1.0.0", .version_length = 5,
                .downloads_for_request = downloads,
            };

            BA_EXTENSION_EXPORT const ba_extension_desc *ba_extension_descriptor(void) { return &descriptor; }
            """)
        let compile = try await runProcess(
            "/usr/bin/env",
            [
                "cc", "-shared", "-fPIC", "-Wall", "-Werror", "-I",
                BuildProducts.source("Sources/CBAExtension/include"), "-o", "libHelloC.so", "hello.c",
            ],
            currentDirectory: directory.path)
        #expect(compile.status == 0, "\(compile.stderr)")
        let run = try await runProcess(
            ba, ["run-extension", directory.url.appendingPathComponent("libHelloC.so").path, "--event", "periodic"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("HelloC 1.0.0"))
        #expect(run.stdout.contains("hello from C"))
        #expect(run.stdout.contains("hello "))
    }
}
