import sys, time, numpy as np, torch
sys.path.insert(0, '/work/main/benchmarks')
import train_on_synthetic as T
args = T.parse_args(['--evaluate-on', 'validation', '--epsilons', '10', '--seeds', '1', '--threads', '1'])
from dpgm.threads import set_threads
set_threads(1)
config = T.dpgm_config(args)
train, test = T.load_data(args, 0.5)
shape = train.image_shape
t = time.time()
mixture, report = T.synthesize(config, train, 10.0, 0, 1)
print('trained', time.time() - t, report['epsilon'], flush=True)
tx, ty = test.dense(np.uint8), test.labels
for tau in (1.0, 0.8, 0.6):
    for m in mixture.models:
        m.sample_logits = (lambda n, g, m=m, tau=tau: m.decoder(torch.randn(n, m.latent, generator=g) * tau))
    images, labels = T.draw(mixture, 60000, 0, None)
    clf = T.train_classifier(images, labels, shape, epochs=3, seed=0, select_on='none')
    print('tau', tau, 'accuracy', T.accuracy(clf, tx, ty, shape), flush=True)
