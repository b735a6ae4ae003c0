//! Development probe: `cargo run --release -p memtrail-embed --example probe -- DIR TEXT...`
//! prints the encoder's mean-pooled vector (first 8 values) and the pairwise cosines of the texts.
use memtrail_embed::bert::{Bert, BertConfig, read_safetensors};
use memtrail_embed::model::normalize;
use memtrail_embed::tokenizer::WordPiece;
fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let dir = std::path::Path::new(&a[0]);
    let t = std::time::Instant::now();
    let bert = Bert::from_tensors(
        read_safetensors(&std::fs::read(dir.join("model.safetensors")).unwrap()).unwrap(),
        BertConfig::default(),
    )
    .unwrap();
    let vocab = WordPiece::from_vocab_txt(&std::fs::read_to_string(dir.join("vocab.txt")).unwrap())
        .unwrap();
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
