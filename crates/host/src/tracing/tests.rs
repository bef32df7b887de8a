use super::*;

/// Sessions are process-wide: the tests that begin one take turns.
static TURN: Mutex<()> = Mutex::new(());

fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("rtx-tracing-{}-{name}.json", std::process::id()))
}

/// The complete events of a written trace: (thread, name, start, end) in microseconds.
fn spans(text: &str) -> Vec<(u64, String, f64, f64)> {
    let field = |line: &str, key: &str| -> String {
        let at = line.find(&format!("\"{key}\":")).unwrap_or_else(|| panic!("no {key} in {line}")) + key.len() + 3;
        let rest = &line[at..];
        let end = if let Some(quoted) = rest.strip_prefix('"') {
            quoted.find('"').unwrap() + 2
        } else {
            rest.find([',', '}']).unwrap()
        };
        rest[..end].trim_matches('"').to_owned()
    };
    text.lines()
        .filter(|line| line.contains("\"ph\":\"X\""))
        .map(|line| {
            let (ts, dur): (f64, f64) = (field(line, "ts").parse().unwrap(), field(line, "dur").parse().unwrap());
            (field(line, "tid").parse().unwrap(), field(line, "name"), ts, ts + dur)
        })
        .collect()
}

#[test]
fn off_a_span_costs_nothing_and_records_nothing() {
    let _turn = TURN.lock().unwrap_or_else(PoisonError::into_inner);
    assert!(!is_on());
    let _span =
        span(Category::Driver, || -> String { unreachable!("named while off") }, || unreachable!("args while off"));
    assert_eq!(end().unwrap_err().code, StatusCode::FailedPrecondition);
}

#[test]
#[cfg_attr(miri, ignore = "Miri's isolation forbids writing files")]
fn spans_of_each_thread_nest_in_the_written_file() {
    let _turn = TURN.lock().unwrap_or_else(PoisonError::into_inner);
    let path = scratch("nest");
    begin(&path).unwrap();
    assert_eq!(begin(scratch("second")).unwrap_err().code, StatusCode::FailedPrecondition);
    {
        let _outer = span(
            Category::Driver,
            || "outer \"quoted\"".to_owned(),
            || Args::none().with("detail", "a\\b").with("count", 7u64).with("grid", Value::Grid([1, 2, 3])),
        );
        for i in 0..3 {
            let _inner = span(Category::Driver, || format!("inner {i}"), Args::none);
        }
    }
    std::thread::Builder::new()
        .name("other".into())
        .spawn(|| drop(span(Category::Driver, || "elsewhere".to_owned(), Args::none)))
        .unwrap()
        .join()
        .unwrap();
    // A span that ends on another thread fits no track: left out.
    let moved = span(Category::Driver, || "moved".to_owned(), Args::none);
    std::thread::spawn(move || drop(moved)).join().unwrap();
    let written = end().unwrap();
    assert_eq!((written.events, written.dropped), (5, 0));
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(text.contains("\"args\":{\"detail\":\"a\\\\b\",\"count\":7,\"grid\":\"1x2x3\"}"), "{text}");
    assert!(text.contains("\"thread_name\"") && text.contains("\"name\":\"other\""), "{text}");
    assert!(!text.contains("moved"), "{text}");
    let spans = spans(&text);
    assert_eq!(spans.len(), 5, "{text}");
    let outer = spans.iter().find(|s| s.1.starts_with("outer")).unwrap();
    for inner in spans.iter().filter(|s| s.1.starts_with("inner")) {
        assert_eq!(inner.0, outer.0, "on the thread of the outer span");
        assert!(outer.2 <= inner.2 && inner.3 <= outer.3, "{inner:?} within {outer:?}");
    }
    let elsewhere = spans.iter().find(|s| s.1 == "elsewhere").unwrap();
    assert_ne!(elsewhere.0, outer.0, "another thread, another track");
}

#[test]
#[cfg_attr(miri, ignore = "Miri's isolation forbids writing files")]
fn a_span_of_an_ended_session_is_not_kept_in_the_next() {
    let _turn = TURN.lock().unwrap_or_else(PoisonError::into_inner);
    let (first, second) = (scratch("first"), scratch("next"));
    begin(&first).unwrap();
    let late = span(Category::Driver, || "late".to_owned(), Args::none);
    assert_eq!(end().unwrap().events, 0);
    begin(&second).unwrap();
    drop(late);
    drop(span(Category::Driver, || "kept".to_owned(), Args::none));
    assert_eq!(end().unwrap().events, 1);
    let text = std::fs::read_to_string(&second).unwrap();
    for path in [first, second] {
        let _ = std::fs::remove_file(path);
    }
    assert!(text.contains("\"kept\"") && !text.contains("\"late\""), "{text}");
}

#[test]
#[cfg_attr(miri, ignore = "Miri's isolation forbids writing files")]
fn a_trace_that_cannot_be_written_is_refused_at_the_start() {
    let _turn = TURN.lock().unwrap_or_else(PoisonError::into_inner);
    let error = begin("/nonexistent-folder/trace.json").unwrap_err();
    assert_eq!(error.code, StatusCode::InvalidArgument);
    assert!(error.message.contains("/nonexistent-folder/trace.json"), "{}", error.message);
    assert!(!is_on());
}

/// TFRT's scope lines: a span of a shown level opens a scope and closes it; the others print
/// nothing. No file is written, so this runs under Miri too.
#[test]
fn scopes_of_the_shown_levels_print_as_tfrt_prints_them() {
    let _turn = TURN.lock().unwrap_or_else(PoisonError::into_inner);
    let run = || {
        let _executor = span(Category::Driver, || "Bef Executor".to_owned(), Args::none);
        let _function = span(Category::Driver, || "Function: f".to_owned(), Args::none);
        drop(span(Category::Kernel, || "tfrt.new.chain".to_owned(), Args::none));
        drop(span_as(Category::Kernel, "nn.relu.f32", || "node", Args::none));
    };
    begin_scopes(Level::Default);
    run();
    assert_eq!(end_scopes(), "Scope:Bef Executor\nScope:Function: f\nEnd Scope\nEnd Scope\n");
    begin_scopes(Level::Debug);
    run();
    assert_eq!(
        end_scopes(),
        "Scope:Bef Executor\nScope:Function: f\nScope:tfrt.new.chain\nEnd Scope\nScope:nn.relu.f32\nEnd Scope\nEnd \
         Scope\nEnd Scope\n"
    );
    assert!(!is_on());
    assert_eq!(Level::parse("verbose"), Some(Level::Verbose));
    assert_eq!(Level::parse("loud"), None);
}

/// A track of another clock: its events keep their spacing and are placed by the least offset
/// given, on a track of their own named as asked; a session that ended takes no more.
#[test]
#[cfg_attr(miri, ignore = "Miri's isolation forbids writing files")]
fn a_track_of_another_clock_is_placed_by_its_least_offset() {
    let _turn = TURN.lock().unwrap_or_else(PoisonError::into_inner);
    let path = scratch("track");
    let track = Track::new("device queue");
    begin(&path).unwrap();
    let session = session();
    // The device ran a submission from 1 to 9 us on its clock, a dispatch from 2 to 5 us in it,
    // and the host saw it done at `seen`, inside the span `marker` (later than 9 us into the
    // session: a trace holds nothing from before it began).
    std::thread::sleep(std::time::Duration::from_millis(1));
    let marker = span(Category::Driver, || "marker", Args::none);
    let seen = timestamp();
    drop(marker);
    track.bound_offset(session, seen as i64 - 9_000 + 50_000);
    track.record(session, Category::Submission, "submission".into(), Args::none(), 1_000, 9_000);
    track.record(session, Category::Dispatch, "dispatch".into(), Args::none(), 2_000, 5_000);
    track.bound_offset(session, seen as i64 - 9_000);
    assert_eq!(end().unwrap().events, 3);
    track.record(session, Category::Dispatch, "late".into(), Args::none(), 6_000, 7_000);
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(text.contains("\"name\":\"device queue\""), "{text}");
    let spans = spans(&text);
    let find = |name: &str| spans.iter().find(|s| s.1 == name).unwrap_or_else(|| panic!("{name} in {text}"));
    let (marker, submission, dispatch) = (find("marker"), find("submission"), find("dispatch"));
    assert_eq!(submission.0, dispatch.0, "one track");
    assert_ne!(submission.0, marker.0, "not the host thread's");
    assert!((dispatch.2 - submission.2 - 1.0).abs() < 1e-3 && (submission.3 - dispatch.3 - 4.0).abs() < 1e-3, "{text}");
    assert!(marker.2 <= submission.3 && submission.3 <= marker.3, "ends when seen done: {text}");
}

/// The counters: samples of the values made while tracing that are alive (those made before
/// are not counted, so dropping them counts nothing down), and of the resident memory.
#[test]
#[cfg_attr(miri, ignore = "Miri's isolation forbids writing files")]
fn counters_sample_the_values_made_while_tracing() {
    let _turn = TURN.lock().unwrap_or_else(PoisonError::into_inner);
    let path = scratch("counters");
    let before: Vec<crate::AsyncValueRef<i32>> = (0..50).map(crate::AsyncValueRef::available).collect();
    begin(&path).unwrap();
    drop(before);
    let kept: Vec<crate::AsyncValueRef<i32>> = (0..100).map(crate::AsyncValueRef::available).collect();
    std::thread::sleep(std::time::Duration::from_millis(10));
    let written = end().unwrap();
    drop(kept);
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let samples: Vec<&str> = text.lines().filter(|line| line.contains("\"ph\":\"C\"")).collect();
    assert!(written.samples >= 4 && written.samples == samples.len(), "{text}");
    let alive: Vec<i64> = samples
        .iter()
        .filter_map(|line| line.split("\"alive\":").nth(1))
        .map(|rest| rest.trim_end_matches(['}', ',']).parse().unwrap())
        .collect();
    // Other tests of this process make values meanwhile: at least these are alive at the end.
    assert!(alive.last().is_some_and(|&last| last >= 100), "{alive:?}");
    #[cfg(target_os = "linux")]
    assert!(samples.iter().any(|line| line.contains("\"memory\"") && line.contains("\"resident bytes\":")), "{text}");
}
