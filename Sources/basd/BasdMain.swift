import BADaemonCommand

@main
enum BasdMain {
    static func main() async {
        await Basd.main()
    }
}
