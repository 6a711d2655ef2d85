import BAPacks

#if FUZZING
    /// libFuzzer's entry point: one input, through what a device does with pack metadata.
    /// Built by scripts/fuzz.sh (`--sanitize fuzzer -Xswiftc -DFUZZING`): libFuzzer's `main` drives it.
    @_cdecl("LLVMFuzzerTestOneInput")
    public func packFuzzerTestOneInput(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
        PackMetadataFuzzing.run(UnsafeRawBufferPointer(start: start, count: count))
        return 0
    }
#else
    import Foundation

    /// Without libFuzzer (the normal build): replays the inputs named on the command line through
    /// the same function, e.g. `PackFuzzer Fuzz/regressions/*` to reproduce a crash in a debugger.
    @main
    enum PackFuzzer {
        static func main() throws {
            for path in CommandLine.arguments.dropFirst() {
                let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
                print("running \(path) (\(bytes.count) bytes)")
                bytes.withUnsafeBytes { PackMetadataFuzzing.run($0) }
            }
        }
    }
#endif
