// The crash-safety test's child process: it writes to a store and says what it committed, then
// waits to be killed (SIGKILL) by the test.
//
// Usage: BAStoreCrashProbe DATABASE COUNT PREFIX
// For i in 0..<COUNT: schedules download PREFIX-i and prints "scheduled UNIQUE-ID"; for even i, then
// marks it finished and prints "finished UNIQUE-ID". Each line is written only after its
// transaction has committed. Then it waits until its standard input closes (so an orphan exits).
import BAStore
import Foundation

let arguments = CommandLine.arguments
guard arguments.count == 4, let count = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: BAStoreCrashProbe DATABASE COUNT PREFIX\n".utf8))
    exit(64)
}

func say(_ line: String) {
    // FileHandle writes go straight to the file descriptor: no buffer for a SIGKILL to lose.
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let prefix = arguments[3]
do {
    let store = try BAStore.open(path: arguments[1])
    try store.register(StoredApp(bundleIdentifier: "com.example.probe", version: "1", appDirectory: "/nonexistent"))
    for index in 0..<count {
        let download = try store.schedule(
            StoredDownload(
                appIdentifier: "com.example.probe", identifier: "\(prefix)-\(index)",
                url: "https://cdn.example.com/asset-\(index)", expectedSize: 1024))
        say("scheduled \(download.uniqueIdentifier)")
        if index % 2 == 0 {
            try store.markFinished(
                uniqueIdentifier: download.uniqueIdentifier, destination: "/nonexistent/asset-\(index)", size: 1024)
            say("finished \(download.uniqueIdentifier)")
        }
    }
    say("done")
} catch {
    FileHandle.standardError.write(Data("BAStoreCrashProbe: \(error)\n".utf8))
    exit(1)
}
_ = FileHandle.standardInput.readDataToEndOfFile()
