import BAExtensionRunner

ExtensionRunner.main()
