//! Development probe: `cargo run --release -p memtrail-embed --example probe -- DIR TEXT...`
//! prints the encoder's mean-pooled vector (first 8 values) and the pairwise cosines of the texts.
use memtrail_embed::model::normalize;
fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let dir = std::path::Path::new(&a[0]);
    let t = std::time::Instant::now();
    let memtrail_embed::Transformer { bert, vocab } =
        memtrail_embed::Transformer::load(dir).unwrap();
    eprintln!("load {:?}", t.elapsed());
    let mut vs = Vec::new();
    for text in &a[1..] {
        let mut ids = vec![vocab.cls];
        ids.extend(vocab.encode(text, 254));
        ids.push(vocab.sep);
        println!("ids {:?}", ids);
        let t = std::time::Instant::now();
        let mut v = bert.pooled(&ids);
        eprintln!("forward {:?}", t.elapsed());
        normalize(&mut v);
        println!("{:?}", &v[..8]);
        vs.push(v);
    }
    for i in 0..vs.len() {
        for j in i + 1..vs.len() {
            let c: f32 = vs[i].iter().zip(&vs[j]).map(|(x, y)| x * y).sum();
            println!("cos {i} {j} = {c:.4}");
        }
    }
}
