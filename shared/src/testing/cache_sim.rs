//! What a run of Messages API requests would be billed under the provider's
//! documented prompt-caching rules, worked out from the request bodies.
//!
//! Chapter 10 explains the rules; this module is them, written down as code
//! so a test or a benchmark can put a number on a session without a key or
//! a network. Each rule is one piece of [`CacheSim::request`]:
//!
//! * **A prefix, in a fixed order.** The request is read as a list of
//!   blocks: every tool definition, then every system block, then every
//!   content block of every message. A cache entry is identified by the
//!   exact bytes of everything up to and including one block (and the
//!   model), so a change in any earlier block gives a different entry.
//!   `cache_control` itself is not part of those bytes: moving a marker
//!   does not change the prefix.
//! * **Entries are written only at breakpoints**, the blocks that carry
//!   `cache_control`, and at most [`CacheRules::max_breakpoints`] of them
//!   per request (more is an invalid request).
//! * **A short look-back.** For each breakpoint the provider looks for an
//!   entry ending at the breakpoint itself or at one of the
//!   [`CacheRules::lookback_blocks`] blocks before it; the longest one it
//!   finds over all breakpoints is read.
//! * **A minimum length.** A prefix shorter than
//!   [`CacheRules::min_tokens`] is never written.
//! * **A short life.** An entry lives [`CacheRules::ttl`] after it was last
//!   written or read.
//! * **The price.** What was read costs [`CacheRules::read_price`] of the
//!   normal input price, what is newly written (from the end of what was
//!   read to the last breakpoint that reaches the minimum) costs
//!   [`CacheRules::write_price`], and the rest costs the normal price.
//!
//! Token counts are estimated as a quarter of the bytes of each block's JSON
//! (rounded up), which is close enough to compare two ways of building the
//! same session; a real tokenizer would change the figures, not the ratios.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::Duration;

use serde_json::Value;

// ANCHOR: rules
/// The documented rules, as numbers. [`Default`] holds the values for the
/// five-minute cache of the Anthropic Messages API.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheRules {
    /// Breakpoints allowed in one request.
    pub max_breakpoints: usize,
    /// How many blocks before a breakpoint are searched for an entry.
    pub lookback_blocks: usize,
    /// The shortest prefix, in tokens, that is cached (1,024 for many
    /// models; more for some).
    pub min_tokens: u64,
    /// How long an entry lives after its last write or read.
    pub ttl: Duration,
    /// Price of a token written to the cache, relative to normal input.
    pub write_price: f64,
    /// Price of a token read from the cache, relative to normal input.
    pub read_price: f64,
}

impl Default for CacheRules {
    fn default() -> Self {
        Self {
            max_breakpoints: 4,
            lookback_blocks: 20,
            min_tokens: 1_024,
            ttl: Duration::from_secs(5 * 60),
            write_price: 1.25,
            read_price: 0.1,
        }
    }
}
// ANCHOR_END: rules

/// The input tokens of one request (or a sum of them), split as the
/// provider's `usage` reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Billing {
    /// Every input token of the request.
    pub total: u64,
    /// Read from the cache (`cache_read_input_tokens`).
    pub read: u64,
    /// Written to the cache (`cache_creation_input_tokens`).
    pub written: u64,
    /// Neither (`input_tokens`).
    pub uncached: u64,
}

impl Billing {
    /// What the tokens cost, in units of one uncached input token.
    pub fn billed(&self, rules: &CacheRules) -> f64 {
        self.read as f64 * rules.read_price
            + self.written as f64 * rules.write_price
            + self.uncached as f64
    }

    /// The same figures summed with `other`'s.
    pub fn add(&mut self, other: Billing) {
        self.total += other.total;
        self.read += other.read;
        self.written += other.written;
        self.uncached += other.uncached;
    }
}

/// Why a request body is not one the provider would accept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidRequest {
    /// More `cache_control` markers than the provider allows.
    #[error("{found} cache breakpoints, more than the {max} allowed")]
    TooManyBreakpoints {
        /// How many the body carries.
        found: usize,
        /// How many the provider accepts.
        max: usize,
    },
    /// A marker on a block kind that cannot carry one.
    #[error("a cache breakpoint on a block that cannot carry one ({0})")]
    BadBreakpoint(String),
    /// The body is not a Messages request.
    #[error("the body has no messages array")]
    NoMessages,
    /// The history breaks the `tool_use`/`tool_result` pairing.
    #[error("the messages break the pairing rules: {0}")]
    History(String),
}

/// One block of the prefix.
#[derive(Debug, Clone)]
struct Block {
    tokens: u64,
    /// The hash of the prefix up to and including this block.
    prefix: u64,
    breakpoint: bool,
}

/// The provider's cache, as seen by one sequence of requests.
#[derive(Debug, Default)]
pub struct CacheSim {
    rules: CacheRules,
    /// Prefix hash → when the entry expires.
    entries: HashMap<u64, Duration>,
}

impl CacheSim {
    /// An empty cache that follows `rules`.
    pub fn new(rules: CacheRules) -> Self {
        Self {
            rules,
            entries: HashMap::new(),
        }
    }

    /// The rules it follows.
    pub fn rules(&self) -> &CacheRules {
        &self.rules
    }

    // ANCHOR: request
    /// Bills one request `body` (the JSON sent to `/v1/messages`) arriving
    /// at `now` (any clock, as long as it only goes forward), and updates
    /// the cache as the provider would.
    pub fn request(&mut self, body: &Value, now: Duration) -> Result<Billing, InvalidRequest> {
        let blocks = blocks(body)?;
        check_history(body)?;
        let breakpoints: Vec<usize> = (0..blocks.len())
            .filter(|&index| blocks[index].breakpoint)
            .collect();
        if breakpoints.len() > self.rules.max_breakpoints {
            return Err(InvalidRequest::TooManyBreakpoints {
                found: breakpoints.len(),
                max: self.rules.max_breakpoints,
            });
        }
        let mut end = Vec::with_capacity(blocks.len());
        let mut sum = 0;
        for block in &blocks {
            sum += block.tokens;
            end.push(sum);
        }
        self.entries.retain(|_, expires| *expires > now);

        // The longest live entry at a breakpoint or within the look-back
        // before one.
        let hit = breakpoints
            .iter()
            .filter_map(|&at| {
                (at.saturating_sub(self.rules.lookback_blocks)..=at)
                    .rev()
                    .find(|&index| self.entries.contains_key(&blocks[index].prefix))
            })
            .max();
        let read = hit.map_or(0, |index| end[index]);

        // Everything from there to the last breakpoint long enough to be
        // cached is written, and every such breakpoint gets an entry.
        let mut written = 0;
        for &at in &breakpoints {
            if end[at] < self.rules.min_tokens {
                continue;
            }
            self.entries.insert(blocks[at].prefix, now + self.rules.ttl);
            written = written.max(end[at].saturating_sub(read));
        }
        if let Some(index) = hit {
            // A read renews the entry's life.
            self.entries
                .insert(blocks[index].prefix, now + self.rules.ttl);
        }
        Ok(Billing {
            total: sum,
            read,
            written,
            uncached: sum - read - written,
        })
    }
    // ANCHOR_END: request
}

/// The blocks of a request in the order the provider reads them.
fn blocks(body: &Value) -> Result<Vec<Block>, InvalidRequest> {
    let mut hasher = DefaultHasher::new();
    body.get("model").map(Value::to_string).hash(&mut hasher);
    let mut blocks = Vec::new();
    let mut add = |kind: &str, position: usize, block: &Value| -> Result<(), InvalidRequest> {
        let (bytes, breakpoint) = without_marker(block);
        if breakpoint {
            check_markable(block)?;
        }
        (kind, position, &bytes).hash(&mut hasher);
        blocks.push(Block {
            tokens: (bytes.len() as u64).div_ceil(4),
            prefix: hasher.finish(),
            breakpoint,
        });
        Ok(())
    };
    for tool in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        add("tool", 0, tool)?;
    }
    match body.get("system") {
        Some(Value::Array(system)) => {
            for block in system {
                add("system", 0, block)?;
            }
        }
        Some(text @ Value::String(_)) => add("system", 0, text)?,
        _ => {}
    }
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or(InvalidRequest::NoMessages)?;
    for (index, message) in messages.iter().enumerate() {
        // The role and the message's position are part of the bytes: the
        // same blocks split into messages differently are another prefix.
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        let kind = format!("message {role}");
        match message.get("content") {
            Some(Value::Array(content)) => {
                for block in content {
                    add(&kind, index, block)?;
                }
            }
            Some(text) => add(&kind, index, text)?,
            None => {}
        }
    }
    Ok(blocks)
}

/// The API's pairing rules ([`crate::history::validate`]) hold for the
/// request's messages.
fn check_history(body: &Value) -> Result<(), InvalidRequest> {
    let messages: Vec<crate::protocol::Message> = body
        .get("messages")
        .cloned()
        .map(serde_json::from_value)
        .transpose()
        .map_err(|error| InvalidRequest::History(error.to_string()))?
        .unwrap_or_default();
    crate::history::validate(&messages).map_err(|error| InvalidRequest::History(error.to_string()))
}

/// The block's JSON without its `cache_control`, and whether it had one.
fn without_marker(block: &Value) -> (String, bool) {
    match block {
        Value::Object(fields) if fields.contains_key("cache_control") => {
            let mut fields = fields.clone();
            fields.remove("cache_control");
            (Value::Object(fields).to_string(), true)
        }
        other => (other.to_string(), false),
    }
}

/// The API refuses a breakpoint on an empty text block or on thinking.
fn check_markable(block: &Value) -> Result<(), InvalidRequest> {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
    if kind == "thinking" || kind == "redacted_thinking" {
        return Err(InvalidRequest::BadBreakpoint(kind.to_string()));
    }
    if kind == "text" && block.get("text").and_then(Value::as_str) == Some("") {
        return Err(InvalidRequest::BadBreakpoint("empty text".to_string()));
    }
    Ok(())
}

/// The tokens of every distinct block `bodies` send, each counted once: the
/// content a session has to get into the cache at least once. With every
/// other appearance of a block read at 0.1×, the session would cost
/// `0.1 × total + (1.25 − 0.1) × distinct`, the least any placement of
/// breakpoints can achieve for these requests.
pub fn distinct_tokens(bodies: &[Value]) -> u64 {
    let mut seen = std::collections::HashSet::new();
    let mut tokens = 0;
    for body in bodies {
        let tools = body
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        let system = match body.get("system") {
            Some(Value::Array(blocks)) => blocks.iter().collect(),
            Some(other) => vec![other],
            None => Vec::new(),
        };
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        let content = messages.flat_map(|message| {
            let role = message
                .get("role")
                .map(Value::to_string)
                .unwrap_or_default();
            let blocks: Vec<&Value> = match message.get("content") {
                Some(Value::Array(blocks)) => blocks.iter().collect(),
                Some(other) => vec![other],
                None => Vec::new(),
            };
            blocks.into_iter().map(move |block| (role.clone(), block))
        });
        let all = tools
            .map(|block| ("tool".to_string(), block))
            .chain(
                system
                    .into_iter()
                    .map(|block| ("system".to_string(), block)),
            )
            .chain(content);
        for (kind, block) in all {
            let (bytes, _) = without_marker(block);
            let size = (bytes.len() as u64).div_ceil(4);
            if seen.insert((kind, bytes)) {
                tokens += size;
            }
        }
    }
    tokens
}

/// What `bodies` would cost with a perfect cache (see [`distinct_tokens`]),
/// in units of one uncached input token.
pub fn perfect_cost(rules: &CacheRules, bodies: &[Value], total: u64) -> f64 {
    let distinct = distinct_tokens(bodies);
    total as f64 * rules.read_price + distinct as f64 * (rules.write_price - rules.read_price)
}

/// Removes every `cache_control` from `body`: the request as a harness that
/// marks nothing would send it.
pub fn strip_markers(body: &mut Value) {
    match body {
        Value::Object(fields) => {
            fields.remove("cache_control");
            fields.values_mut().for_each(strip_markers);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_markers),
        _ => {}
    }
}

/// Removes `cache_control` from the messages only, keeping the markers on
/// the tools and the system prompt.
pub fn strip_message_markers(body: &mut Value) {
    if let Some(messages) = body.get_mut("messages") {
        strip_markers(messages);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Rules with a small minimum, so tests can use short texts.
    fn rules(min_tokens: u64) -> CacheRules {
        CacheRules {
            min_tokens,
            ..CacheRules::default()
        }
    }

    /// A text block of `n` tokens (its JSON is exactly 4n bytes).
    fn text(n: usize, letter: char) -> Value {
        // {"type":"text","text":""} is 25 bytes; fill up to 4n.
        let fill = 4 * n - 25;
        json!({"type": "text", "text": letter.to_string().repeat(fill)})
    }

    fn marked(mut block: Value) -> Value {
        block["cache_control"] = json!({"type": "ephemeral"});
        block
    }

    /// A request whose one user message holds `blocks`.
    fn body(blocks: Vec<Value>) -> Value {
        json!({"model": "m", "messages": [{"role": "user", "content": blocks}]})
    }

    const NOW: Duration = Duration::ZERO;

    #[test]
    fn a_block_costs_a_quarter_of_its_json() {
        let mut sim = CacheSim::new(rules(1));
        let billing = sim.request(&body(vec![text(100, 'a')]), NOW).unwrap();
        assert_eq!(billing.total, 100);
        assert_eq!(billing.uncached, 100, "no breakpoint, nothing cached");
    }

    #[test]
    fn the_first_request_writes_the_next_reads_and_the_tail_is_uncached() {
        let mut sim = CacheSim::new(rules(100));
        let first = body(vec![marked(text(200, 'a')), text(50, 'b')]);
        let billing = sim.request(&first, NOW).unwrap();
        assert_eq!(
            (billing.read, billing.written, billing.uncached),
            (0, 200, 50)
        );
        let billing = sim.request(&first, NOW).unwrap();
        assert_eq!(
            (billing.read, billing.written, billing.uncached),
            (200, 0, 50)
        );
        // 1.25× for writing, 0.1× for reading, 1× for the rest.
        let rules = sim.rules().clone();
        let write = Billing {
            total: 250,
            read: 0,
            written: 200,
            uncached: 50,
        };
        assert!((write.billed(&rules) - 300.0).abs() < 1e-9);
        assert!((billing.billed(&rules) - 70.0).abs() < 1e-9);
    }

    #[test]
    fn one_changed_byte_before_the_breakpoint_misses() {
        let mut sim = CacheSim::new(rules(100));
        sim.request(&body(vec![text(100, 'a'), marked(text(100, 'b'))]), NOW)
            .unwrap();
        let mut changed = text(100, 'a');
        changed["text"] = json!(format!("x{}", &changed["text"].as_str().unwrap()[1..]));
        let billing = sim
            .request(&body(vec![changed, marked(text(100, 'b'))]), NOW)
            .unwrap();
        assert_eq!((billing.read, billing.written), (0, 200));
    }

    #[test]
    fn a_marker_is_not_part_of_the_prefix() {
        // The same bytes with the marker moved one block on: the entry at
        // the old position is found within the look-back.
        let mut sim = CacheSim::new(rules(100));
        sim.request(&body(vec![text(100, 'a'), marked(text(100, 'b'))]), NOW)
            .unwrap();
        let billing = sim
            .request(
                &body(vec![text(100, 'a'), text(100, 'b'), marked(text(10, 'c'))]),
                NOW,
            )
            .unwrap();
        assert_eq!(
            (billing.read, billing.written, billing.uncached),
            (200, 10, 0)
        );
    }

    #[test]
    fn the_look_back_reaches_twenty_blocks_before_a_breakpoint_and_no_further() {
        let prefix = vec![marked(text(200, 'a'))];
        let grown = |extra: usize| {
            let mut blocks = vec![text(200, 'a')];
            blocks.extend((0..extra).map(|_| text(10, 'z')));
            let last = blocks.pop().unwrap();
            blocks.push(marked(last));
            body(blocks)
        };
        // The old entry ends 20 blocks before the new breakpoint: found.
        let mut sim = CacheSim::new(rules(100));
        sim.request(&body(prefix.clone()), NOW).unwrap();
        assert_eq!(sim.request(&grown(20), NOW).unwrap().read, 200);
        // 21 blocks before: not found, everything is written again.
        let mut sim = CacheSim::new(rules(100));
        sim.request(&body(prefix), NOW).unwrap();
        let billing = sim.request(&grown(21), NOW).unwrap();
        assert_eq!((billing.read, billing.written), (0, 200 + 21 * 10));
    }

    #[test]
    fn a_prefix_under_the_minimum_is_never_written() {
        let mut sim = CacheSim::new(CacheRules::default());
        let short = body(vec![marked(text(1_023, 'a'))]);
        assert_eq!(sim.request(&short, NOW).unwrap().written, 0);
        assert_eq!(sim.request(&short, NOW).unwrap().read, 0);
        let long = body(vec![marked(text(1_024, 'a'))]);
        assert_eq!(sim.request(&long, NOW).unwrap().written, 1_024);
        assert_eq!(sim.request(&long, NOW).unwrap().read, 1_024);
    }

    #[test]
    fn an_entry_lives_five_minutes_from_its_last_use() {
        let mut sim = CacheSim::new(rules(1));
        let request = body(vec![marked(text(100, 'a'))]);
        let minute = Duration::from_secs(60);
        assert_eq!(sim.request(&request, NOW).unwrap().written, 100);
        // Read at 4 minutes: the entry now lives until 9.
        assert_eq!(sim.request(&request, 4 * minute).unwrap().read, 100);
        assert_eq!(sim.request(&request, 8 * minute).unwrap().read, 100);
        // 5 minutes after the last read it is gone.
        let billing = sim.request(&request, 13 * minute).unwrap();
        assert_eq!((billing.read, billing.written), (0, 100));
    }

    #[test]
    fn more_than_four_breakpoints_or_one_on_thinking_is_an_invalid_request() {
        let mut sim = CacheSim::new(rules(1));
        let four: Vec<Value> = (0..4).map(|_| marked(text(10, 'a'))).collect();
        assert!(sim.request(&body(four.clone()), NOW).is_ok());
        let mut five = four;
        five.push(marked(text(10, 'b')));
        assert_eq!(
            sim.request(&body(five), NOW),
            Err(InvalidRequest::TooManyBreakpoints { found: 5, max: 4 })
        );
        let thinking = marked(json!({"type": "thinking", "thinking": "x", "signature": "s"}));
        assert!(matches!(
            sim.request(&body(vec![thinking]), NOW),
            Err(InvalidRequest::BadBreakpoint(_))
        ));
    }

    #[test]
    fn tools_then_system_then_messages_and_the_model_are_one_prefix() {
        let request = |tool: &str, system: &str, model: &str| {
            json!({
                "model": model,
                "tools": [{"name": tool, "description": "d".repeat(400), "input_schema": {}}],
                "system": [{"type": "text", "text": system.repeat(400), "cache_control": {"type": "ephemeral"}}],
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            })
        };
        let mut sim = CacheSim::new(rules(100));
        let first = sim.request(&request("a", "s", "m"), NOW).unwrap();
        assert!(first.written > 200 && first.read == 0);
        assert_eq!(
            sim.request(&request("a", "s", "m"), NOW).unwrap().read,
            first.written
        );
        // A changed tool, system text or model: nothing is read.
        assert_eq!(sim.request(&request("b", "s", "m"), NOW).unwrap().read, 0);
        assert_eq!(sim.request(&request("a", "t", "m"), NOW).unwrap().read, 0);
        assert_eq!(sim.request(&request("a", "s", "n"), NOW).unwrap().read, 0);
        // The message after the breakpoint is billed in full.
        assert!(first.uncached > 0);
    }

    #[test]
    fn the_longest_entry_over_all_breakpoints_is_read() {
        let mut sim = CacheSim::new(rules(10));
        let first = body(vec![marked(text(100, 'a')), marked(text(100, 'b'))]);
        sim.request(&first, NOW).unwrap();
        // The second block changed: only the first breakpoint's entry fits.
        let second = body(vec![marked(text(100, 'a')), marked(text(100, 'c'))]);
        let billing = sim.request(&second, NOW).unwrap();
        assert_eq!((billing.read, billing.written), (100, 100));
    }

    #[test]
    fn distinct_content_is_counted_once() {
        let first = body(vec![text(100, 'a')]);
        let second = body(vec![marked(text(100, 'a')), text(50, 'b')]);
        assert_eq!(distinct_tokens(&[first.clone(), second.clone()]), 150);
        let rules = CacheRules::default();
        let cost = perfect_cost(&rules, &[first, second], 250);
        assert!((cost - (25.0 + 150.0 * 1.15)).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn stripping_markers_leaves_nothing_to_cache() {
        let mut request = body(vec![marked(text(2_000, 'a'))]);
        strip_markers(&mut request);
        let mut sim = CacheSim::new(CacheRules::default());
        sim.request(&request, NOW).unwrap();
        assert_eq!(sim.request(&request, NOW).unwrap().uncached, 2_000);
    }
}
