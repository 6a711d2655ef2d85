import BACommands
import BADaemonCommand

@main
enum BA {
    static func main() async {
        // One binary for both: the package installs ba, and basd as a symlink to it
        // (scripts/install.sh), so the code they share is there once.
        if let name = CommandLine.arguments.first?.split(separator: "/").last, name == "basd" {
            await Basd.main()
            return
        }
        OutputBuffering.lineBufferWhenPiped()
        await BACommand.main()
    }
}
