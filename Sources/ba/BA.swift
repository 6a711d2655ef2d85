import BACommands

@main
enum BA {
    static func main() async {
        await BACommand.main()
    }
}
