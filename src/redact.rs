//! placeholder until the provider branch lands
/// placeholder
pub fn redact(text: &str, secrets: &[&str]) -> String {
    let mut out = text.to_string();
    for s in secrets {
        if !s.is_empty() {
            out = out.replace(s, "[REDACTED]");
        }
    }
    out
}
