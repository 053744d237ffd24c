package demo

import seerep "github.com/gardend/gardend/proto"

// Full gRPC method names, the keys of ServerStats.Calls, so tests outside this package
// can count calls without importing the generated code.
const (
	MethodProjectDetails = seerep.MetaOperations_GetProjectDetails_FullMethodName
	MethodMeasurement    = seerep.MeasurementService_GetMeasurementByUUID_FullMethodName
	MethodInstance       = seerep.LabelService_GetInstance_FullMethodName
	MethodClass          = seerep.LabelService_GetClass_FullMethodName
	MethodTransform      = seerep.TfService_GetTransformStamped_FullMethodName
	MethodPointCloud     = seerep.PointCloudService_GetPointCloud2ByUUID_FullMethodName
)
