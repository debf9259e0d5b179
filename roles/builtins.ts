/** The stage types `hd` ships with. */
import { Registry } from '../pipelines/registry';
import { kafkaSourceStage } from './stages/kafkaSource';
import { s3SourceStage } from './stages/s3Source';
import { sccSinkStage } from './stages/sccSink';
import { fileSourceStage } from './stages/fileSource';
import { hdwpFileSinkStage } from './stages/hdwpFileSink';
import { batchTimeoutStage } from './stages/batchTimeout';
import { dmsServiceStage } from './stages/dmsService';
import { proxyServiceStage } from './stages/proxyService';
import { sqlServerStage } from './stages/sqlServer';
import { nodeIdentityStage } from './stages/nodeIdentity';
import { hashChainStage } from './stages/hashChain';
import { hdwpSourceStage } from './stages/hdwpSource';
import { parseStage } from './stages/parse';
import { queryDispatchStage } from './stages/queryDispatch';
import { queryListenerStage } from './stages/queryListener';
import { replicateStage } from './stages/replicate';
import { resultStreamStage } from './stages/resultStream';
import { scanStage } from './stages/scan';
import { segmentStoreStage } from './stages/segmentStore';
import { timeBatchStage } from './stages/timeBatch';

/** A fresh registry holding every built-in stage type. */
export function builtinRegistry(): Registry {
  return new Registry().register(fileSourceStage).register(parseStage).register(timeBatchStage).register(hdwpFileSinkStage).register(hdwpSourceStage).register(segmentStoreStage).register(batchTimeoutStage).register(hashChainStage).register(replicateStage).register(queryListenerStage).register(scanStage).register(resultStreamStage).register(queryDispatchStage).register(kafkaSourceStage).register(s3SourceStage).register(sccSinkStage).register(dmsServiceStage).register(proxyServiceStage).register(sqlServerStage).register(nodeIdentityStage);
}
