fn main() -> std::process::ExitCode {
    let cli = convo_doctor::cli::parse();
    std::process::ExitCode::from(convo_doctor::run(cli).code())
}
