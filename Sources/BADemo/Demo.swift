import ArgumentParser
import BAAssetServer
import BACommands
import BADaemonProtocol
import BADownloadEngine
import Foundation

/// `ba demo`: the whole system at work on a loopback asset server, with the sample app, its
/// extension and its asset packs, in a temporary folder that is removed afterwards.
struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the whole system: the sample app and its asset packs, installed on a loopback server.",
        discussion: """
            In a temporary folder: serves Examples/SampleApp's assets on a loopback HTTP server, publishes \
            its asset packs there with `ba pack keygen`, `build` and `publish --key` (base essential, levels \
            prefetch, extras on demand), starts basd, installs the sample app (its essential downloads with a \
            progress bar, and the essential pack before `ba install` returns), lets the rest download in the \
            background (the extension schedules the catalog's assets when the catalog arrives; levels is \
            prefetched), launches the sample app (which promotes what is still downloading to the \
            foreground and moves finished files under exclusive control), asks basd for the on-demand pack \
            (as `ba packs ensure` does), publishes version 2 of levels and has basd check for it (as a \
            periodic run does), showing what the delta fetched and reused, then prints where every asset \
            and pack file is, verified by SHA-256 (the packs by basd against their indexes, as `ba packs \
            verify` does), and removes the folder. Needs `swift build` first: it runs the basd, \
            ba-extension-runner, SampleApp and libSampleSwiftExtension.so built next to this ba.

            Exit codes: 0 every asset and pack file verified; 42 a step failed or an asset or pack file is \
            missing or wrong (the folder is kept for a look); 66 the build products or Examples/ are missing; \
            21 interrupted (SIGINT, SIGTERM, SIGHUP, or its output closed): basd and the app stopped, the \
            folder removed. basd and the app also get SIGTERM if ba dies any other way, even SIGKILL.

            Examples:
              ba demo
              ba demo --keep --rate 524288     # slower link, keep the folder afterwards
            """)

    @Option(
        help: ArgumentHelp(
            "The Examples folder of this checkout (default: found from ba's location).", valueName: "dir"))
    var examples: String?

    @Option(help: "Bytes per second per connection the server sends the non-essential assets at, like a slow link.")
    var rate: Int = 2 << 20

    @Flag(help: "Keep the temporary folder (basd's state, the app's container) afterwards.")
    var keep = false

    func validate() throws {
        guard rate >= 16 << 10 else { throw ValidationError("--rate must be at least 16384 bytes per second") }
    }

    func run() async throws {
        let products: DemoProducts
        do {
            products = try DemoProducts.locate(examples: examples)
        } catch {
            printError("\(error)")
            throw ExitCode(BAExitCode.noInput.rawValue)
        }
        let signals: Int32
        let stage: DemoStage
        do {
            signals = try DemoStage.catchInterruptions()
            stage = try DemoStage(products: products, rate: rate)
        } catch {
            printError("\(error)")
            throw ExitCode(BAExitCode.demoFailed.rawValue)
        }
        stage.handleInterruptions(from: signals)
        var failure: String?
        do {
            try await stage.run()
        } catch let error as DemoFailure {
            failure = error.message
        } catch {
            failure = "\(error)"
        }
        // A child that wrote to a closed stdout died of SIGPIPE before ba wrote there: that is
        // the reader going away, not a failed step.
        if failure != nil && stage.outputClosed { stage.interrupt(.outputClosed) }
        // An interruption that came first stops everything, removes the folder and exits 21; its
        // SIGTERM may be what made a step fail, so the steps neither report nor clean up then.
        guard stage.claimEndingForTheSteps() else { await Self.waitForTheInterruption() }
        if let failure { DemoStage.sayError(failure) }
        await stage.stop()
        if failure == nil && !keep {
            stage.removeFolder()
        } else {
            stage.say("the demo's folder is kept: \(stage.folder)")
        }
        if failure != nil { throw ExitCode(BAExitCode.demoFailed.rawValue) }
    }

    /// Suspends for good: the interruption exits the process.
    private static func waitForTheInterruption() async -> Never {
        while true { await withUnsafeContinuation { (_: UnsafeContinuation<Void, Never>) in } }
    }
}

/// A step of the demo that failed, with what to look at.
struct DemoFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Where the demo finds what `swift build` made and the sample app's sources.
struct DemoProducts {
    var ba: String
    var basd: String
    var sampleApp: String
    var sampleExtension: String
    var examples: String

    static func locate(examples: String?) throws -> DemoProducts {
        let ba =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let build = (ba as NSString).deletingLastPathComponent
        let products = DemoProducts(
            ba: ba, basd: build + "/basd", sampleApp: build + "/SampleApp",
            sampleExtension: build + "/libSampleSwiftExtension.so",
            examples: try examples ?? findExamples(from: build))
        for path in [products.basd, build + "/ba-extension-runner", products.sampleApp, products.sampleExtension]
        where !FileManager.default.isExecutableFile(atPath: path) && !FileManager.default.fileExists(atPath: path) {
            throw DemoFailure(message: "\(path) is missing: run `swift build` in the checkout first")
        }
        guard FileManager.default.fileExists(atPath: products.examples + "/SampleApp/Info.plist") else {
            throw DemoFailure(message: "\(products.examples)/SampleApp/Info.plist is missing: pass --examples DIR")
        }
        return products
    }

    /// `Examples/` in the first folder above `build` that has one (`.build/debug` is two below the checkout).
    private static func findExamples(from build: String) throws -> String {
        var folder = URL(fileURLWithPath: build).standardizedFileURL
        for _ in 0..<6 {
            let candidate = folder.appendingPathComponent("Examples/SampleApp/Info.plist").path
            if FileManager.default.fileExists(atPath: candidate) {
                return folder.appendingPathComponent("Examples").path
            }
            folder.deleteLastPathComponent()
        }
        let current = FileManager.default.currentDirectoryPath + "/Examples"
        if FileManager.default.fileExists(atPath: current + "/SampleApp/Info.plist") { return current }
        throw DemoFailure(message: "cannot find Examples/SampleApp above \(build) or here: pass --examples DIR")
    }
}

/// `ba demo`, for the `ba` executable's list of subcommands.
package enum BADemoCommand {
    package static let command: any ParsableCommand.Type = Demo.self
}
