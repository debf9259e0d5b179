/** The stage and service types `hd` ships with. */
import { Registry } from '../pipelines/registry';
import { kafkaSourceStage } from './stages/kafkaSource';
import { s3SourceStage } from './stages/s3Source';
import { sccSinkStage } from './stages/sccSink';
import { fileSourceStage } from './stages/fileSource';
import { hdwpFileSinkStage } from './stages/hdwpFileSink';
import { batchTimeoutStage } from './stages/batchTimeout';
import { hashChainStage } from './stages/hashChain';
import { hdwpSourceStage } from './stages/hdwpSource';
import { normIngestStage } from './stages/normIngest';
import { parseStage } from './stages/parse';
import { queryListenerStage } from './stages/queryListener';
import { replicateStage } from './stages/replicate';
import { resultStreamStage } from './stages/resultStream';
import { scanStage } from './stages/scan';
import { segmentStoreStage } from './stages/segmentStore';
import { timeBatchStage } from './stages/timeBatch';
import { deliveryLedgerType } from './services/deliveryLedger';
import { dmsServiceType } from './services/dmsService';
import { nodeIdentityType } from './services/nodeIdentity';
import { proxyServiceType } from './services/proxyService';
import { queryDispatchType } from './services/queryDispatch';
import { sccNodeType } from './services/sccNode';
import { sqlServerType } from './services/sqlServer';
import { storageNodeType } from './services/storageNode';
import { windowRewindType } from './services/windowRewind';

/** A fresh registry holding every built-in stage and service type. */
export function builtinRegistry(): Registry {
  return (
    new Registry()
      // Stages.
      .register(fileSourceStage)
      .register(parseStage)
      .register(timeBatchStage)
      .register(hdwpFileSinkStage)
      .register(hdwpSourceStage)
      .register(normIngestStage)
      .register(segmentStoreStage)
      .register(batchTimeoutStage)
      .register(hashChainStage)
      .register(replicateStage)
      .register(queryListenerStage)
      .register(scanStage)
      .register(resultStreamStage)
      .register(kafkaSourceStage)
      .register(s3SourceStage)
      .register(sccSinkStage)
      // Services.
      .register(nodeIdentityType)
      .register(storageNodeType)
      .register(sccNodeType)
      .register(queryDispatchType)
      .register(deliveryLedgerType)
      .register(windowRewindType)
      .register(dmsServiceType)
      .register(proxyServiceType)
      .register(sqlServerType)
  );
}
