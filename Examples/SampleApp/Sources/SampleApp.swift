// The sample app: a command-line app that uses Background Assets the way Apple's sample app does.
//
//   SampleApp APP_DIR [--deadline SECONDS]
//   SampleApp APP_DIR --open-extras
//
// It reads its own Info.plist (APP_DIR/Info.plist) for its bundle identifier, app group and
// manifest URL, then hands over to ``AssetLibrary``: set a delegate, fetch the current downloads,
// promote them to the foreground, move finished files into the app group container under
// exclusive control, and download again whatever is still missing. It exits 0 once every asset
// of the catalog is in `CONTAINER/Assets/` and it has read its essential asset pack through
// AssetPackManager (PackShelf.swift), 1 if one cannot be had or the deadline (default 120 s) passes
// first, 64 on bad usage. With `--open-extras` it only downloads its on-demand pack `extras` now,
// showing its status updates, and opens a file of it.
//
// Written as for Apple's framework: `import BackgroundAssets` brings Foundation (and, on Linux,
// FoundationNetworking).
import BackgroundAssets

@main
struct SampleApp {
    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        var seconds = 120.0
        if let flag = arguments.firstIndex(of: "--deadline") {
            guard flag + 1 < arguments.count, let value = Double(arguments[flag + 1]), value >= 0 else { usage() }
            seconds = value
            arguments.removeSubrange(flag...flag + 1)
        }
        let openExtras = arguments.contains("--open-extras")
        arguments.removeAll { $0 == "--open-extras" }
        guard arguments.count == 1 else { usage() }
        let bundle: AppBundle
        do {
            bundle = try AppBundle(directory: URL(fileURLWithPath: arguments[0]))
        } catch {
            FileHandle.standardError.write(Data("SampleApp: \(error)\n".utf8))
            exit(64)
        }
        // On Apple's systems the bundle identifier comes from the app's own bundle; here the
        // Info.plist sits in the app directory we were given (a Linux addition, docs/app-client.md).
        BADownloadManager.shared.baConfigure(bundleIdentifier: bundle.bundleIdentifier)
        if openExtras {
            do {
                try await PackShelf.openExtras()
                exit(0)
            } catch {
                FileHandle.standardError.write(
                    Data("SampleApp: asset pack extras: \(error.localizedDescription)\n".utf8))
                exit(1)
            }
        }
        guard
            let container = FileManager.default.containerURL(
                forSecurityApplicationGroupIdentifier: bundle.appGroupIdentifier)
        else {
            FileHandle.standardError.write(
                Data(
                    ("SampleApp: basd knows no container for \(bundle.appGroupIdentifier); "
                        + "is the app installed?\n").utf8))
            exit(1)
        }
        let library = AssetLibrary(bundle: bundle, assetsFolder: container.appendingPathComponent("Assets"))
        let ready = await library.makeEverythingAvailable(deadline: Date(timeIntervalSinceNow: seconds))
        do {
            try await PackShelf.openBase()
        } catch {
            FileHandle.standardError.write(Data("SampleApp: asset pack base: \(error.localizedDescription)\n".utf8))
            exit(1)
        }
        exit(ready ? 0 : 1)
    }

    static func usage() -> Never {
        FileHandle.standardError.write(Data("usage: SampleApp APP_DIR [--deadline SECONDS | --open-extras]\n".utf8))
        exit(64)
    }
}

/// What the app knows about itself, from its Info.plist.
struct AppBundle {
    var bundleIdentifier: String
    var appGroupIdentifier: String
    /// Where the app's content lives on the server: the folder of `BAManifestURL`.
    var contentBaseURL: URL

    struct Missing: Error, CustomStringConvertible {
        var description: String
    }

    init(directory: URL) throws {
        let path = directory.appendingPathComponent("Info.plist")
        let plist = try PropertyListSerialization.propertyList(from: Data(contentsOf: path), format: nil)
        guard let info = plist as? [String: Any],
            let bundleIdentifier = info["CFBundleIdentifier"] as? String,
            let group = info["BAAppGroupID"] as? String,
            let manifest = (info["BAManifestURL"] as? String).flatMap(URL.init(string:))
        else {
            throw Missing(description: "\(path.path) needs CFBundleIdentifier, BAAppGroupID and BAManifestURL")
        }
        self.bundleIdentifier = bundleIdentifier
        self.appGroupIdentifier = group
        self.contentBaseURL = manifest.deletingLastPathComponent()
    }
}

/// Prints one line of the app's story.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data("  app: \(line)\n".utf8))
}
