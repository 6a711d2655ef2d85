import BACommands

@main
enum BA {
    static func main() async {
        OutputBuffering.lineBufferWhenPiped()
        await BACommand.main()
    }
}
