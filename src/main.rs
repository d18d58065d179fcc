use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = convo_doctor::cli::Cli::parse();
    std::process::ExitCode::from(convo_doctor::run(cli).code())
}
