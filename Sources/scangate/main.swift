import App

let code = ScanGateCommand.main(arguments: Array(CommandLine.arguments.dropFirst()))
exit(code)
